/* Model profiles (profiles/models, one .ini file per model): the accepted keys, the shape
 * checks, and the figures derived from a shape (parameter count, KV-cache bytes per token).
 * Not for loading directories or lookups (catalog.c) nor for operator costs (cost/). */
#include "catalog/catalog_int.h"

#include <stddef.h>
#include <string.h>

#define KEY(sec, name_, kind_, field, req)                                                      \
    {.section = sec, .key = name_, .kind = kind_, .off = offsetof(cat_model, field),              \
     .size = sizeof(((cat_model *)0)->field), .scale = 1, .required = req}

/* name must stay first: its line is reported for duplicate names. The index constants
 * below name the lines used by the cross-field checks. */
static const cat__key model_keys[] = {
    KEY("model", "name", CAT__NAME, name, 1),
    KEY("model", "description", CAT__TEXT, description, 0),
    KEY("model", "layers", CAT__UPOS, layers, 1),
    KEY("model", "hidden", CAT__UPOS, hidden, 1),
    KEY("model", "heads", CAT__UPOS, heads, 1),
    KEY("model", "kv_heads", CAT__UPOS, kv_heads, 1),
    KEY("model", "head_dim", CAT__UPOS, head_dim, 1),
    KEY("model", "ffn", CAT__UPOS, ffn, 1),
    KEY("model", "vocab", CAT__UPOS, vocab, 1),
    KEY("model", "experts", CAT__UNONNEG, experts, 0),
    KEY("model", "top_k", CAT__UNONNEG, top_k, 0),
    KEY("model", "max_context", CAT__UPOS, max_context, 1),
    KEY("model", "dtype", CAT__DTYPE, dtype_bytes, 1),
    KEY("model", "gated_mlp", CAT__BOOL, gated_mlp, 1),
    KEY("model", "tied_embeddings", CAT__BOOL, tied_embeddings, 1),
};

enum { K_NAME = 0, K_LAYERS = 2, K_KV_HEADS = 5, K_EXPERTS = 9, K_TOP_K = 10 };

#define N_MODEL_KEYS (sizeof model_keys / sizeof *model_keys)
_Static_assert(N_MODEL_KEYS <= CAT__MAX_KEYS, "raise CAT__MAX_KEYS");

/* The line to blame for a cross-field error: the key's own line, else the name's. */
static unsigned blame(const cat__ini_info *info, int k)
{
    return info->line[k] ? info->line[k] : info->line[K_NAME];
}

/* Checks that involve several keys. heads * head_dim == hidden is deliberately not
 * required: several model families (Gemma, for one) break it. */
static int check_shape(const cat_model *m, const char *path, const cat__ini_info *info,
                       ss_errbuf *eb)
{
    if (m->layers > CAT_MAX_LAYERS)
        return ss_err(eb, SS_EPARSE, "%s:%u: model.layers: %u is more than %d", path,
                      blame(info, K_LAYERS), m->layers, CAT_MAX_LAYERS);
    if (m->heads % m->kv_heads)
        return ss_err(eb, SS_EPARSE, "%s:%u: model.kv_heads: heads (%u) is not a multiple of "
                      "kv_heads (%u)", path, blame(info, K_KV_HEADS), m->heads, m->kv_heads);
    if (m->experts > 1 && (m->top_k < 1 || m->top_k > m->experts))
        return ss_err(eb, SS_EPARSE, "%s:%u: model.top_k: a mixture of %u experts needs "
                      "1 <= top_k <= %u (got %u)", path, blame(info, K_TOP_K), m->experts,
                      m->experts, m->top_k);
    if (m->experts <= 1 && m->top_k != 0)
        return ss_err(eb, SS_EPARSE, "%s:%u: model.top_k: must be 0 for a dense model "
                      "(experts = %u)", path, blame(info, K_TOP_K), m->experts);
    return SS_OK;
}

int cat__model_read(void *dst, const char *path, unsigned *name_line, ss_errbuf *eb)
{
    cat_model *m = dst;
    memset(m, 0, sizeof *m);
    cat__ini_info info;
    int rc = cat__ini_read(m, model_keys, N_MODEL_KEYS, path, &info, eb);
    if (rc)
        return rc;
    rc = check_shape(m, path, &info, eb);
    if (rc)
        return rc;
    *name_line = info.line[K_NAME];
    if (!m->description[0])
        memcpy(m->description, m->name, sizeof m->name);
    return SS_OK;
}

/* Parameter count of a decoder-only transformer. Biases (Qwen's QKV bias, a few thousand
 * per layer) and rotary tables are ignored: they are below 0.01 % of any model here. */
double cat_model_params(const cat_model *m)
{
    double h = m->hidden, q_dim = (double)m->heads * m->head_dim;
    double kv_dim = (double)m->kv_heads * m->head_dim;
    double n_experts = m->experts > 1 ? m->experts : 1;
    double attn = h * q_dim + 2 * h * kv_dim + q_dim * h;
    double mlp = (m->gated_mlp ? 3 : 2) * h * m->ffn * n_experts;
    double router = m->experts > 1 ? h * m->experts : 0;
    double layer = attn + mlp + router + 2 * h;
    double embed = (double)m->vocab * h;
    double lm_head = m->tied_embeddings ? 0 : embed;
    return embed + m->layers * layer + h + lm_head;
}

/* K and V, every layer, every KV head: 2 * layers * kv_heads * head_dim * dtype_bytes. */
double cat_model_kv_bytes_per_token(const cat_model *m)
{
    return 2.0 * m->layers * m->kv_heads * m->head_dim * m->dtype_bytes;
}
