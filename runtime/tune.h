/*
 * tune.h — internals of the autotuner (include/tilec/runtime.h has
 * tc_autotune, the public side): the cost model (tune_model.c), the tuning
 * table and its text format (tune_table.c), and the tuner (autotune.c).
 *
 * Like the rest of runtime/, everything here allocates with malloc, checks
 * every result and reports failures through rt_fail() (base/base.h).
 */
#ifndef TILEC_RUNTIME_TUNE_H
#define TILEC_RUNTIME_TUNE_H

#include "tilec/runtime.h"

#include "base/base.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ==== tune_model.c: gradient-boosted regression trees ====
 *
 * The cost model that ranks a kernel's configurations before any is timed:
 * an ensemble of regression trees fitted in stages to the residuals of the
 * ones before (gradient boosting on the squared error), each tree split
 * greedily on the feature and threshold that most reduce the squared error
 * of its two sides. Features are doubles (any scale: only their order
 * matters to a split); NaN is not allowed. Training is deterministic: the
 * same data gives the same model. */
typedef struct RtGbtParams {
    int num_trees;        /* boosting stages: 1 .. 10000 */
    int max_depth;        /* 1 .. 12 */
    double learning_rate; /* shrinkage of each tree: (0, 1] */
    int min_leaf;         /* fewest samples in a leaf: >= 1 */
} RtGbtParams;

/* 200 trees of depth 4, learning rate 0.1, at least 2 samples a leaf. */
void rt_gbt_params_default(RtGbtParams *p);

typedef struct RtGbt RtGbt;

/* Fits a model to n samples of d features: x is row-major, n x d; y has n
 * targets. x, y and out not NULL, n >= 1, 1 <= d <= 4096, every value
 * finite, p valid (NULL: the defaults): else TC_ERROR_INVALID_ARGUMENT,
 * with a message naming the argument. Out of memory:
 * TC_ERROR_OUT_OF_MEMORY. On any failure *out is NULL (when out is not). */
tc_status rt_gbt_train(const double *x, const double *y, size_t n, size_t d, const RtGbtParams *p, RtGbt **out);
/* The model's prediction for one sample of the d features it was fitted on
 * (x holds rt_gbt_num_features(m) values). m must be a trained model, not
 * NULL. A split sends a value <= its threshold left, anything else (NaN
 * too) right. */
double rt_gbt_predict(const RtGbt *m, const double *x);
/* The d the model was fitted on; m not NULL. */
size_t rt_gbt_num_features(const RtGbt *m);
/* Frees the model; NULL is a no-op. */
void rt_gbt_free(RtGbt *m);

/* ==== tune_table.c: the tuning table ====
 *
 * What tc_autotune measured, as text: one line per entry, tab-separated,
 * after a first line "tilec-tune 1":
 *
 *   KIND GPU BUILD HASH KERNEL KEYS CONFIG MS
 *
 *   KIND    best (the tuned configuration for these keys) or time (one
 *           configuration's measurement: the cost model's training data)
 *   GPU     the device's name as the driver gives it ("NVIDIA H200"):
 *           1..255 printable ASCII characters, no tab
 *   BUILD   the tuner's build id (rt_build_id: 1..64 lowercase hex
 *           digits), or * for any build (the tables shipped with the
 *           library)
 *   HASH    the kernel's identity, 64 lowercase hex digits (SHA-256 of its
 *           source, name, fixed constexprs and target)
 *   KERNEL  the kernel's name, an identifier of at most 255 characters
 *   KEYS    the bucketed key values, comma-separated decimal integers (at
 *           most RT_TUNE_MAX_KEYS; each an int64: an optional '-' and
 *           digits, no '+', no space), or - when the kernel has no key
 *   CONFIG  the configuration, NAME=VALUE pairs separated by commas (at
 *           most RT_TUNE_MAX_FIELDS; NAME an identifier of at most 63
 *           characters, VALUE a decimal integer, true or false), or - when
 *           empty
 *   MS      the median time in milliseconds: a finite number > 0, in
 *           decimal (the characters 0-9 . e E + - only: no nan, inf or
 *           hex float)
 *
 * Lines starting with # and empty lines are comments. Lines are at most
 * RT_TUNE_MAX_LINE bytes without their '\n' (the last may lack it); a '\r'
 * or a NUL is an error on any line, a comment's included. A table has at
 * most RT_TUNE_MAX_ENTRIES entries. The parser takes nothing else: any
 * other text is an error naming the line, and nothing of the table is kept.
 * Numbers are read and written in the C locale, whatever the program's.
 *
 * A best entry is one slot per gpu, build, hash and keys; a time entry one
 * per gpu, build, hash, keys and config (configs compared as sets of pairs,
 * in any order; true and 1 differ). A file may hold a slot twice: find
 * takes the first, and a put replaces the first and drops the others. */
enum {
    RT_TUNE_MAX_KEYS = 16,
    RT_TUNE_MAX_FIELDS = 32,
    RT_TUNE_MAX_NAME = 63,
    RT_TUNE_MAX_LINE = 4096,
    RT_TUNE_MAX_ENTRIES = 1 << 17,
};

typedef enum RtTuneKind { RT_TUNE_BEST, RT_TUNE_TIME } RtTuneKind;

typedef struct RtTuneField {
    char name[RT_TUNE_MAX_NAME + 1];
    int64_t value; /* true 1, false 0 */
    bool is_bool;
} RtTuneField;

typedef struct RtTuneEntry {
    RtTuneKind kind;
    char gpu[256];
    char build[65];       /* "*" or hex */
    char hash[65];        /* 64 hex digits */
    char kernel[256];
    int64_t keys[RT_TUNE_MAX_KEYS];
    size_t num_keys;
    RtTuneField fields[RT_TUNE_MAX_FIELDS];
    size_t num_fields;
    double ms;
} RtTuneEntry;

typedef struct RtTuneTable {
    RtTuneEntry *entries;
    size_t count, cap;
} RtTuneTable;

/* Parses text (len bytes, need not be NUL-terminated) into t (which must be
 * empty: {0}; else TC_ERROR_INVALID_ARGUMENT and t is left as it is). On an
 * error t stays empty and `why` (why_cap bytes, cut and NUL-terminated; may
 * be NULL with why_cap 0) says which line and what is wrong, "line N: ...",
 * as tc_last_error() does: TC_ERROR_INVALID_ARGUMENT, or
 * TC_ERROR_OUT_OF_MEMORY. */
tc_status rt_tune_table_parse(const char *text, size_t len, RtTuneTable *t, char *why, size_t why_cap);
/* The table as text, the first line and every entry in order, appended to
 * out; MS with the fewest digits (15 to 17) that read back to the same
 * double, so that the text parses to an equal table. False when out of
 * memory, or when an entry is not one rt_tune_table_put would take (the
 * table was changed by hand). */
bool rt_tune_table_format(const RtTuneTable *t, RtBytes *out);
/* The entry's CONFIG column, as the text format writes it ("-" if empty),
 * cut to cap bytes and NUL-terminated (RT_TUNE_MAX_LINE always suffice). */
void rt_tune_config_text(const RtTuneEntry *e, char *out, size_t cap);
/* The best entry for gpu, hash and keys (the same number and values) whose
 * build is `build` or "*": the first of the exact build, else the first of
 * "*", else NULL. build NULL: "*" only. */
const RtTuneEntry *rt_tune_table_find(const RtTuneTable *t, const char *gpu, const char *build, const char *hash,
                                      const int64_t *keys, size_t num_keys);
/* Adds a copy of e (which may be an entry of t). A best entry replaces the
 * best entry of the same gpu, build, hash and keys; a time entry replaces
 * the time entry of the same gpu, build, hash, keys and config; else it is
 * appended. TC_ERROR_OUT_OF_MEMORY, or TC_ERROR_INVALID_ARGUMENT when the
 * table is full or e is not an entry the text format can hold (every field
 * as the parser would take it; a boolean's value 0 or 1). */
tc_status rt_tune_table_put(RtTuneTable *t, const RtTuneEntry *e);
/* Adds every entry of src to t, as rt_tune_table_put (t == src: nothing to
 * do). On an error the entries before the failing one stay added. */
tc_status rt_tune_table_merge(RtTuneTable *t, const RtTuneTable *src);
void rt_tune_table_free(RtTuneTable *t);

/* The file `name` (no slash) in the directory dir, which the caller made
 * with rt_cache_prepare. Read: the directory and the file are trusted as
 * the disk cache trusts its entries (rt_cache_dir_trusted,
 * rt_cache_entry_trusted: owned by the effective user, not writable by
 * others, a regular file reached without following a link) and parsed; a
 * missing file (or directory) is *found = false and TC_OK. An untrusted or
 * unparsable file, or one over 64 MiB, is TC_ERROR_IO with the reason, and
 * t (which must be empty) stays empty. Write: the whole table, to a
 * temporary file ".tmp-NAME-PID-RANDOM" of mode 0600 (whatever the umask),
 * fsynced and renamed over `name` (atomic); TC_ERROR_INVALID_ARGUMENT if
 * the table cannot be formatted or is over 64 MiB. name "", "." or ".."
 * or with a '/': TC_ERROR_INVALID_ARGUMENT. */
tc_status rt_tune_table_load_file(const char *dir, const char *name, RtTuneTable *t, bool *found);
tc_status rt_tune_table_store_file(const char *dir, const char *name, const RtTuneTable *t);

/* Key bucketing: a key value v becomes the smallest power of two >= v for
 * 1 <= v <= 2^62, and stays as it is for v <= 0 and for v > 2^62 (whose
 * power of two, 2^63, is not an int64), so that tuned entries cover every
 * size up to the next power of two. */
int64_t rt_tune_bucket(int64_t v);

/* ==== autotune.c: what the standard library asks of the table ==== */

/* The SHA-256 of a kernel's source text, and the kernel's identity in the
 * table from it: its name, constexprs (any order), options (NULL: the
 * defaults) and target, as 64 hex digits. */
void rt_tune_source_digest(const char *text, size_t len, uint8_t digest[32]);
void rt_tune_kernel_hash(const uint8_t source_digest[32], const char *kernel, const tc_constexpr *constexprs,
                         size_t num_constexprs, const tc_options *o, const char *arch, char hex[65]);
/* The tuned configuration for the kernel `hash` at these key values
 * (bucketed here) on ctx's device: the user's table (tuning.tsv, loaded on
 * first use) first, then `shipped` (may be NULL); false when neither has
 * one. */
/* Changes with every change of the user's table (a tuning, the first
 * load): what a memo of rt_tune_find's answers compares. */
uint64_t rt_tune_generation(void);
bool rt_tune_find(tc_context *ctx, const char *hash, const int64_t *keys, size_t num_keys, const RtTuneTable *shipped,
                  RtTuneEntry *out);

#endif
