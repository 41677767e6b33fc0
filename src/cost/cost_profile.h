/* Profile tables: measured operator times in slicesim's CSV format (profiles/PROFILE-FORMAT.md),
 * read by the `profile` and `auto` cost backends and written by `slicesim profile import`.
 * This header holds the row model, a validating row reader, the writer, and the importer of
 * Vidur's published profiles with its roofline fidelity report. Not for choosing a backend:
 * that is cost.h's cost_model_create. */
#ifndef SS_COST_COST_PROFILE_H
#define SS_COST_COST_PROFILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "catalog/catalog.h"
#include "core/ss_err.h"
#include "cost/cost.h"

/* The key columns of a row, in the order they are written. */
typedef enum cost_prof_key {
    COST_PK_HIDDEN,    /* model width */
    COST_PK_HEADS,     /* query heads (whole model, not per GPU) */
    COST_PK_KV_HEADS,  /* key/value heads */
    COST_PK_HEAD_DIM,  /* per head */
    COST_PK_FFN,       /* intermediate size of one (expert) MLP */
    COST_PK_GATED,     /* 1 = gated (SwiGLU) MLP, 0 = plain */
    COST_PK_VOCAB,     /* vocabulary size */
    COST_PK_EXPERTS,   /* MoE experts; 0 = dense (1 is read as 0) */
    COST_PK_TOP_K,     /* experts per token; 0 = dense */
    COST_PK_TP,        /* tensor-parallel degree the operator ran at (per-GPU shard) */
    COST_PK_TOKENS,    /* cost_op.tokens: query tokens (sequences for lm_head and attn_decode) */
    COST_PK_KV_TOKENS, /* attention: KV tokens the batch touches (cost_op.ctx_tokens) */
    COST_PK_N_GPUS,    /* collectives: GPUs taking part */
    COST_PK_BYTES,     /* collectives: payload per GPU, bytes */
    COST_PK__COUNT
} cost_prof_key;

#define COST_PROF_ANY (-1) /* a key cell of "-" or empty: any value / not used */

/* One row of a profile table. */
typedef struct cost_prof_row {
    cost_op_kind op;                 /* operator */
    int64_t key[COST_PK__COUNT];     /* COST_PROF_ANY or >= 0 */
    double median_us;                /* > 0 */
    double min_us;                   /* < 0 when not given */
    double p90_us;                   /* < 0 when not given */
    const char *source;              /* free text, "" when none; borrowed */
} cost_prof_row;

/* Column name of key k ("hidden", ..., "bytes"). */
const char *cost_prof_key_name(cost_prof_key k);

/* A row reader over one table file. */
typedef struct cost_prof_reader cost_prof_reader;

/* Open a profile table and check its header (op and median_us required; the other columns of
 * the format are optional; unknown columns are errors). 0; SS_EIO (cannot open); SS_EPARSE
 * ("FILE:LINE: column: what is wrong"); SS_ENOMEM. path is borrowed and must outlive the
 * reader; on success *r_out is owned by the caller (cost_prof_reader_close). */
int cost_prof_reader_open(cost_prof_reader **r_out, const char *path, ss_errbuf *eb);
/* Read and validate the next row into *row (its source points into the reader and is valid
 * until the next call). 1 row, 0 end of file, SS_EPARSE / SS_EIO / SS_ENOMEM with eb set. */
int cost_prof_reader_next(cost_prof_reader *r, cost_prof_row *row, ss_errbuf *eb);
/* Line number of the row last returned. */
unsigned cost_prof_reader_line(const cost_prof_reader *r);
/* Close; accepts NULL and sets *r = NULL. */
void cost_prof_reader_close(cost_prof_reader **r);

/* Fill row->key with the shape keys operator row->op of model m depends on (the others, and
 * tp, tokens, kv_tokens, n_gpus and bytes, become COST_PROF_ANY): the keys `slicesim profile
 * import` and `slicesim calibrate` write, so that a table applies to every catalog model
 * sharing them (profiles/PROFILE-FORMAT.md). Collectives get no shape keys. */
void cost_prof_shape_keys(cost_prof_row *row, const cat_model *m);

/* The query tokens of the one sequence a table lookup stands in for a prefill-attention batch
 * of n_seqs sequences with `tokens` query tokens, `ctx_tokens` keys (sum of c0 + q) and `pairs`
 * causal (query, key) pairs: the q with q * ctx_tokens - q (q - 1) / 2 = pairs, so that the
 * lookup (q, ctx_tokens) does the batch's arithmetic and reads its keys. Tables measure one
 * sequence per point; looking a batch up at its total tokens would price n prompts as one
 * n times longer (quadratic). One sequence (or no pairs given) keeps `tokens`. */
double cost_prof_prefill_equiv_tokens(uint64_t tokens, uint32_t n_seqs, uint64_t ctx_tokens,
                                      double pairs);

/* mkdir -p dir: 0, SS_EINVAL (path too long) or SS_EIO ("DIR: cannot create directory: why"). */
int cost_prof_make_dirs(const char *dir, ss_errbuf *eb);

/* Write the header row (all columns of the format) to f. */
void cost_prof_write_header(FILE *f);
/* Write one row to f in the column order of cost_prof_write_header. */
void cost_prof_write_row(FILE *f, const cost_prof_row *row);

/* {======================================================================
 * Importing Vidur profiles
 * ======================================================================= */

/* Fidelity of the roofline against one imported operator table (one operator at one TP
 * degree, or one collective over n GPUs). */
typedef struct cost_prof_fid {
    cost_op_kind op;    /* operator */
    uint32_t tp;        /* TP degree; for collectives the GPUs taking part */
    size_t rows;        /* rows written for it */
    uint64_t key_min;   /* smallest key: tokens, or bytes for collectives */
    uint64_t key_max;   /* largest key */
    double median_min_us, median_max_us; /* range of the imported medians, us */
    int compared;       /* 1 when the roofline could be evaluated (a catalog model matched) */
    double mape;        /* mean |roofline - median| / median over the rows, fraction */
    double bias;        /* mean (roofline - median) / median, fraction (< 0: underestimates) */
} cost_prof_fid;

/* What one import did. */
typedef struct cost_prof_import {
    char out_path[1024];        /* table written */
    int collective;             /* 0: compute operators keyed by tokens; 1: a collective */
    char model[CAT_NAME_MAX];   /* catalog model used for the roofline ("" when none matched) */
    char shape[128];            /* the source's model shape, human-readable ("" for collectives) */
    size_t rows_in;             /* data rows read */
    size_t rows_kept;           /* of those, rows imported (collectives: rank 0, one node) */
    cost_prof_fid *fid;         /* per operator and TP, in write order; owned */
    size_t n_fid;
} cost_prof_import;

/* Convert one Vidur CSV (compute/<gpu>/<org>/<model>/mlp.csv, or network/<node>/all_reduce.csv
 * or send_recv.csv) into a profile table in out_dir (created if missing), written to a .tmp
 * file and renamed, and compare the roofline of GPU gpu against every imported median. The
 * table is named after the catalog model whose shape matches (vocabulary ignored) or the
 * source's model directory; collectives after the operator and the node directory.
 * 0, or SS_EPARSE ("FILE:LINE: column: what"), SS_EIO, SS_ENOMEM with eb set; nothing is
 * written then. cat, gpu, in_path and out_dir are borrowed; *res is filled on success and
 * released with cost_prof_import_fini. */
int cost_prof_import_vidur(const char *in_path, const catalog *cat, const cat_gpu *gpu,
                           const char *out_dir, cost_prof_import *res, ss_errbuf *eb);
/* Called with the table's path before anything is written: nonzero (with eb set) stops the
 * import with that code, writing nothing. */
typedef int cost_prof_out_check_fn(void *ud, const char *out_path, ss_errbuf *eb);
/* cost_prof_import_vidur that first asks check (unless NULL) whether out_path may be written. */
int cost_prof_import_vidur_checked(const char *in_path, const catalog *cat, const cat_gpu *gpu,
                                   const char *out_dir, cost_prof_out_check_fn *check, void *ud,
                                   cost_prof_import *res, ss_errbuf *eb);
/* Free what an import result owns; leaves *res zeroed. */
void cost_prof_import_fini(cost_prof_import *res);

/* }====================================================================== */

#endif
