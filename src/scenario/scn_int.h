/* Private to src/scenario: the key table shared by the file reader, --set and the writer, the
 * value parsers and formatters behind it, and the private state a scenario owns. Other
 * modules see only scenario.h. */
#ifndef SS_SCENARIO_SCN_INT_H
#define SS_SCENARIO_SCN_INT_H

#include <stddef.h>
#include <stdint.h>

#include "scenario/scenario.h"

/* Sections; SCN__TENANT stands for every [tenant.NAME]. */
typedef enum scn__sect {
    SCN__CLUSTER,
    SCN__POLICY,
    SCN__RUN,
    SCN__ENGINE,
    SCN__KVPOOL,
    SCN__TENANT,
} scn__sect;

/* How the text of one key becomes a field. */
typedef enum scn__kind {
    SCN__NAME,  /* char[size]: [a-z0-9._-]+ */
    SCN__TEXT,  /* char[size]: non-empty text */
    SCN__OPT,   /* char[size]: text, "" = not set */
    SCN__PATH,  /* char[size]: as SCN__OPT; relative paths from a file: from its folder */
    SCN__PROFILE, /* char[size]: a catalog name as SCN__NAME (at most SCN_NAME_MAX - 1
                     characters), or a profile file's path (scn_profile_is_path) as SCN__PATH */
    SCN__ENUM,  /* char[size]: one of choices */
    SCN__U32,   /* uint32_t in [lo, hi] */
    SCN__U64,   /* uint64_t in [lo, hi] */
    SCN__F64,   /* double in [lo, hi], or (lo, hi] when lo_open */
    SCN__BOOL,  /* int: true|false */
    SCN__CLASS, /* scn_tenant class_lo, class_hi: "LO:HI" with LO <= HI */
    SCN__SLA,   /* scn_tenant sla[].field at off (offset within scn_sla): 1 or up to 10 values */
} scn__kind;

/* One accepted key. off is from the start of scn_scenario, or of scn_tenant for tenant keys. */
typedef struct scn__key {
    scn__sect sect;      /* section it belongs to */
    const char *name;    /* key name, units included (duration_s) */
    scn__kind kind;      /* parsing and range rule */
    size_t off;          /* offsetof the destination field */
    size_t size;         /* sizeof the destination field (checked against kind) */
    double lo, hi;       /* numeric range */
    int lo_open;         /* SCN__F64: lo itself is excluded */
    const char *choices; /* SCN__ENUM: "a, b, c" */
    const char *(*choices_of)(void); /* SCN__ENUM: the choices from a registry instead */
} scn__key;

/* What key k accepts, in words, into buf ("integer, 1 to 4096"; "one of: a, b"). */
void scn__key_values(const scn__key *k, char *buf, size_t size);
/* Section k's name ("cluster", ...; "tenant" for tenant keys). */
const char *scn__sect_name(scn__sect s);

/* The table, in canonical order (the order scn_write uses), and its length. */
extern const scn__key scn__keys[];
extern const size_t scn__n_keys;

/* What a scenario keeps besides its public fields. */
typedef struct scn__priv {
    ss_params *param_lines;                  /* [policy] key -> line in a file, as text ("0"
                                                once --set has replaced it) */
    ss_params *origins;                      /* "SECTION.KEY" -> where its value came from:
                                                "FILE:LINE", "--set" or an option's name */
    uint8_t max_replicas_set[SS_MAX_TENANTS]; /* 1: tenant i's max_replicas was given, so it
                                                  no longer follows replicas */
    uint8_t sla_n[SS_MAX_TENANTS][3];       /* values in tenant i's sla_ttft_ms, sla_tbt_ms,
                                                sla_e2e_ms lists (0: never set, i.e. 1) */
    int routing_set;                         /* 1: routing was given, so it no longer follows
                                                cluster (llumnix clusters route their own way) */
} scn__priv;

/* Section name to section; -1 when unknown. For "tenant.NAME" *tenant points at NAME. */
int scn__sect_find(const char *section, const char **tenant);
/* Key of section sect, or NULL. */
const scn__key *scn__key_find(scn__sect sect, const char *name);
/* For a misspelt key or section: " (did you mean X?)", naming the key of section sect (or,
 * with sect -1, the section) nearest to name, when one is within two edits (a letter changed,
 * added, dropped, or two swapped) and fewer than half of name's letters; else "". Into buf
 * (n bytes). */
const char *scn__suggest(int sect, const char *name, char *buf, size_t n);
/* Parse value (already trimmed and unquoted) into the field of k at base (scn_scenario or
 * scn_tenant). dir: folder for relative SCN__PATH values, NULL to keep them as given.
 * 0, or SS_EPARSE with "expected ..., got '...'" in why; the field is unchanged on error. */
int scn__key_store(void *base, const scn__key *k, const char *value, const char *dir, char *why,
                   size_t why_size);
/* Format the field of k at base (s itself, or one of its tenants) as the text scn__key_store
 * reads back to the same value. */
void scn__key_format(const scn_scenario *s, const void *base, const scn__key *k, char *buf,
                     size_t size);
/* 1 when v is [a-z0-9._-]+ and shorter than size. */
int scn__name_ok(const char *v, size_t size);
/* 1 when every table entry's size matches its kind (checked once by scn_create). */
int scn__keys_ok(void);
/* Text rule shared by every free-text value: no control character, no '"', no ';' at the start
 * or after a blank (INI comment). 1 when ok. */
int scn__text_ok(const char *v);
/* 1 when the line "key = value" that scn_write writes (value quoted when it holds a blank; a
 * relative path, abs_path set, made absolute from the current directory) fits on one line of
 * a scenario file (SS_INI_LINE_MAX), so that a written scenario reads back. */
int scn__line_fits(const char *key, const char *value, int abs_path);
/* The number of values given for tenant t's SLA list of the field at off (1 when unset). */
uint32_t scn__sla_count(const scn_scenario *s, const scn_tenant *t, size_t off);

#endif
