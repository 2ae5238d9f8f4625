/*
 * tune_table.c — the autotuner's table (tune.h): its text format, lookups
 * and updates, and its file in the disk cache's directory.
 *
 * The parser is strict: the first line that is not a comment is exactly
 * "tilec-tune 1", every other one is an entry of exactly eight
 * tab-separated fields, each checked as tune.h describes (hex digits are
 * lowercase only, as rt_hex writes them; integers are decimal int64 with
 * an optional '-', checked for overflow; MS is read by strtod, but only
 * from the characters [0-9.eE+-], so no "nan", "inf" or hex float passes).
 * A line is at most RT_TUNE_MAX_LINE bytes without its '\n'; the last line
 * may lack the '\n'; a '\r' or a NUL anywhere, even in a comment, is an
 * error. An error names its line and nothing of the table is kept. Numbers
 * are read and written in the C locale, whatever the host program's is.
 *
 * Every entry of a table is valid: the parser builds only valid ones and
 * rt_tune_table_put refuses the others (entry_check), so that what
 * rt_tune_table_format writes always parses back to an equal table. MS is
 * written with the fewest significant digits (15 to 17) that read back to
 * the same double.
 *
 * Identity: a best entry is one slot per (gpu, build, hash, keys), a time
 * entry one per (gpu, build, hash, keys, config), configurations compared
 * as sets of NAME=VALUE (true and 1 differ). A parsed file may hold two
 * entries of one slot; lookups take the first, and a put replaces the
 * first and drops the others.
 *
 * The file lives in the JIT's disk cache directory and is trusted as its
 * entries are (cache.c): the directory is opened once without following a
 * link and checked (rt_cache_dir_trusted), the file is opened through it
 * without following a link or blocking and checked (rt_cache_entry_trusted)
 * before a byte is read. A store writes a temp file ".tmp-NAME-PID-RANDOM"
 * (the cache's scan removes those a killed writer leaves) of mode 0600,
 * fsyncs it and renames it over the table: readers see the old table or
 * the new one.
 */
#include "runtime/runtime.h"
#include "runtime/tune.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define MAGIC "tilec-tune 1"
#define NUM_COLUMNS 8
#define MAX_FILE_BYTES ((size_t)64 << 20)
#define ERR_CAP 192

/* ---- the C locale, for strtod and %g ---- */

static locale_t c_locale;
static pthread_once_t c_locale_once = PTHREAD_ONCE_INIT;

static void make_c_locale(void) {
    c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
}

/* Switches the calling thread to the C locale; returns what to restore
 * (0: nothing, the C locale could not be made). */
static locale_t enter_c_locale(void) {
    pthread_once(&c_locale_once, make_c_locale);
    return c_locale ? uselocale(c_locale) : (locale_t)0;
}

static void leave_c_locale(locale_t old) {
    if (old)
        uselocale(old);
}

/* ---- characters and fields ---- */

static bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

static bool is_hex(char c) {
    return is_digit(c) || (c >= 'a' && c <= 'f');
}

static bool is_ident_start(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool ident_ok(const char *p, size_t n, size_t max) {
    if (n < 1 || n > max || !is_ident_start(p[0]))
        return false;
    for (size_t i = 1; i < n; i++)
        if (!is_ident_start(p[i]) && !is_digit(p[i]))
            return false;
    return true;
}

static bool hex_ok(const char *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!is_hex(p[i]))
            return false;
    return true;
}

static bool gpu_ok(const char *p, size_t n) {
    if (n < 1 || n > 255)
        return false;
    for (size_t i = 0; i < n; i++)
        if (p[i] < 0x20 || p[i] > 0x7e)
            return false;
    return true;
}

static bool build_ok(const char *p, size_t n) {
    return (n == 1 && p[0] == '*') || (n >= 1 && n <= 64 && hex_ok(p, n));
}

static bool hash_ok(const char *p, size_t n) {
    return n == 64 && hex_ok(p, n);
}

/* A decimal int64: an optional '-' and digits, nothing else. 0, or -1 if
 * it is not one, or -2 if it is out of range. */
static int parse_i64(const char *p, size_t n, int64_t *out) {
    bool neg = n > 0 && p[0] == '-';
    size_t i = neg ? 1 : 0;
    if (i == n)
        return -1;
    uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX, v = 0;
    bool over = false;
    for (; i < n; i++) {
        if (!is_digit(p[i]))
            return -1;
        unsigned d = (unsigned)(p[i] - '0');
        if (v > (limit - d) / 10)
            over = true; /* keep checking the syntax: "99...9x" is not a number at all */
        else
            v = v * 10 + d;
    }
    if (over)
        return -2;
    *out = neg ? (v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v) : (int64_t)v;
    return 0;
}

/* The next item of a comma-separated list: [*pos, end of item). */
static size_t next_item(const char *p, size_t n, size_t pos) {
    const char *c = memchr(p + pos, ',', n - pos);
    return c ? (size_t)(c - p) : n;
}

static bool keys_equal(const RtTuneEntry *e, const int64_t *keys, size_t num_keys) {
    if (e->num_keys != num_keys)
        return false;
    for (size_t i = 0; i < num_keys; i++)
        if (e->keys[i] != keys[i])
            return false;
    return true;
}

/* The same NAME=VALUE pairs, in any order (names are unique in each). */
static bool config_equal(const RtTuneEntry *a, const RtTuneEntry *b) {
    if (a->num_fields != b->num_fields)
        return false;
    for (size_t i = 0; i < a->num_fields; i++) {
        const RtTuneField *f = &a->fields[i];
        bool seen = false;
        for (size_t j = 0; j < b->num_fields && !seen; j++) {
            const RtTuneField *g = &b->fields[j];
            seen = strcmp(f->name, g->name) == 0 && f->value == g->value && f->is_bool == g->is_bool;
        }
        if (!seen)
            return false;
    }
    return true;
}

/* Whether a and b are the same slot of the table (see the header). */
static bool same_slot(const RtTuneEntry *a, const RtTuneEntry *b) {
    return a->kind == b->kind && strcmp(a->gpu, b->gpu) == 0 && strcmp(a->build, b->build) == 0 &&
           strcmp(a->hash, b->hash) == 0 && keys_equal(a, b->keys, b->num_keys) &&
           (a->kind == RT_TUNE_BEST || config_equal(a, b));
}

/* A NUL-terminated string of at most cap - 1 bytes in a char[cap]: its
 * length, or cap if it has no NUL. */
static size_t bounded_len(const char *s, size_t cap) {
    return strnlen(s, cap);
}

/* Whether e is an entry the text format can hold; why gets what is not. */
static bool entry_check(const RtTuneEntry *e, char *why, size_t why_cap) {
    size_t n;
    const char *bad = NULL;
    if (e->kind != RT_TUNE_BEST && e->kind != RT_TUNE_TIME)
        bad = "KIND: neither best nor time";
    else if ((n = bounded_len(e->gpu, sizeof e->gpu)) == sizeof e->gpu || !gpu_ok(e->gpu, n))
        bad = "GPU: expected 1 to 255 printable ASCII characters";
    else if ((n = bounded_len(e->build, sizeof e->build)) == sizeof e->build || !build_ok(e->build, n))
        bad = "BUILD: expected * or 1 to 64 lowercase hex digits";
    else if ((n = bounded_len(e->hash, sizeof e->hash)) == sizeof e->hash || !hash_ok(e->hash, n))
        bad = "HASH: expected 64 lowercase hex digits";
    else if ((n = bounded_len(e->kernel, sizeof e->kernel)) == sizeof e->kernel || !ident_ok(e->kernel, n, 255))
        bad = "KERNEL: expected an identifier of at most 255 characters";
    else if (e->num_keys > RT_TUNE_MAX_KEYS)
        bad = "KEYS: more than 16 keys";
    else if (e->num_fields > RT_TUNE_MAX_FIELDS)
        bad = "CONFIG: more than 32 pairs";
    else if (!isfinite(e->ms) || !(e->ms > 0))
        bad = "MS: not a finite number > 0";
    for (size_t i = 0; !bad && i < e->num_fields; i++) {
        const RtTuneField *f = &e->fields[i];
        if ((n = bounded_len(f->name, sizeof f->name)) == sizeof f->name || !ident_ok(f->name, n, RT_TUNE_MAX_NAME))
            bad = "CONFIG: a name that is not an identifier of 1 to 63 characters";
        else if (f->is_bool && f->value != 0 && f->value != 1)
            bad = "CONFIG: a boolean that is neither 0 nor 1";
        for (size_t j = 0; !bad && j < i; j++)
            if (strcmp(e->fields[j].name, f->name) == 0)
                bad = "CONFIG: a name given twice";
    }
    if (!bad)
        return true;
    snprintf(why, why_cap, "%s", bad);
    return false;
}

/* ---- the table in memory ---- */

/* Room for one more entry. */
static bool grow(RtTuneTable *t) {
    if (t->count < t->cap)
        return true;
    size_t cap = t->cap ? 2 * t->cap : 16;
    if (cap > RT_TUNE_MAX_ENTRIES)
        cap = RT_TUNE_MAX_ENTRIES;
    if (cap <= t->count || cap > SIZE_MAX / sizeof *t->entries)
        return false;
    RtTuneEntry *p = realloc(t->entries, cap * sizeof *p);
    if (!p)
        return false;
    t->entries = p;
    t->cap = cap;
    return true;
}

void rt_tune_table_free(RtTuneTable *t) {
    if (!t)
        return;
    free(t->entries);
    memset(t, 0, sizeof *t);
}

const RtTuneEntry *rt_tune_table_find(const RtTuneTable *t, const char *gpu, const char *build, const char *hash,
                                      const int64_t *keys, size_t num_keys) {
    if (!t || !gpu || !hash || (num_keys && !keys))
        return NULL;
    const RtTuneEntry *any = NULL;
    for (size_t i = 0; i < t->count; i++) {
        const RtTuneEntry *e = &t->entries[i];
        if (e->kind != RT_TUNE_BEST || strcmp(e->gpu, gpu) != 0 || strcmp(e->hash, hash) != 0 ||
            !keys_equal(e, keys, num_keys))
            continue;
        if (build && strcmp(e->build, build) == 0)
            return e;
        if (!any && strcmp(e->build, "*") == 0)
            any = e;
    }
    return any;
}

tc_status rt_tune_table_put(RtTuneTable *t, const RtTuneEntry *e) {
    char why[ERR_CAP];
    if (!entry_check(e, why, sizeof why))
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tuning table: entry refused: %s", why);
    RtTuneEntry copy = *e; /* e may be one of t's entries, and t's array may move */
    size_t at = 0;
    while (at < t->count && !same_slot(&t->entries[at], &copy))
        at++;
    if (at < t->count) {
        t->entries[at] = copy;
        size_t w = at + 1; /* a parsed table may hold the slot twice: keep one */
        for (size_t r = at + 1; r < t->count; r++)
            if (!same_slot(&t->entries[r], &copy))
                t->entries[w++] = t->entries[r];
        t->count = w;
        return TC_OK;
    }
    if (t->count >= RT_TUNE_MAX_ENTRIES)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tuning table full: %d entries", RT_TUNE_MAX_ENTRIES);
    if (!grow(t))
        return rt_fail(TC_ERROR_OUT_OF_MEMORY, "out of memory growing the tuning table");
    t->entries[t->count++] = copy;
    return TC_OK;
}

tc_status rt_tune_table_merge(RtTuneTable *t, const RtTuneTable *src) {
    if (t == src)
        return TC_OK;
    for (size_t i = 0; i < src->count; i++) {
        tc_status st = rt_tune_table_put(t, &src->entries[i]);
        if (st != TC_OK)
            return st;
    }
    return TC_OK;
}

int64_t rt_tune_bucket(int64_t v) {
    if (v <= 1 || v > ((int64_t)1 << 62))
        return v; /* 2^63 is not an int64: above 2^62 a value is its own bucket */
    return (int64_t)((uint64_t)1 << (64 - __builtin_clzll((unsigned long long)(v - 1))));
}

/* ---- text ---- */

/* Appends printf text at *pos of out[cap], cut (and NUL-terminated) at
 * the end; *pos counts what would have been written. */
static void put_text(char *out, size_t cap, size_t *pos, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void put_text(char *out, size_t cap, size_t *pos, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(*pos < cap ? out + *pos : NULL, *pos < cap ? cap - *pos : 0, fmt, ap);
    va_end(ap);
    if (n > 0)
        *pos += (size_t)n;
}

void rt_tune_config_text(const RtTuneEntry *e, char *out, size_t cap) {
    size_t pos = 0;
    if (cap)
        out[0] = 0;
    if (e->num_fields == 0)
        put_text(out, cap, &pos, "-");
    for (size_t i = 0; i < e->num_fields && i < RT_TUNE_MAX_FIELDS; i++) {
        const RtTuneField *f = &e->fields[i];
        const char *sep = i ? "," : "";
        int w = (int)bounded_len(f->name, sizeof f->name);
        if (f->is_bool)
            put_text(out, cap, &pos, "%s%.*s=%s", sep, w, f->name, f->value ? "true" : "false");
        else
            put_text(out, cap, &pos, "%s%.*s=%" PRId64, sep, w, f->name, f->value);
    }
}

/* ms with the fewest digits (15 to 17) that read back as ms. In the C locale. */
static void format_ms(double ms, char *out, size_t cap) {
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(out, cap, "%.*g", prec, ms);
        if (strtod(out, NULL) == ms)
            return;
    }
}

/* One entry's line, '\n' included, into line[cap] (cap > RT_TUNE_MAX_LINE):
 * its length. e is valid. */
static size_t format_entry(const RtTuneEntry *e, char *line, size_t cap) {
    size_t pos = 0;
    char config[RT_TUNE_MAX_LINE], ms[64];
    put_text(line, cap, &pos, "%s\t%s\t%s\t%s\t%s\t", e->kind == RT_TUNE_BEST ? "best" : "time", e->gpu, e->build,
             e->hash, e->kernel);
    if (e->num_keys == 0)
        put_text(line, cap, &pos, "-");
    for (size_t i = 0; i < e->num_keys; i++)
        put_text(line, cap, &pos, "%s%" PRId64, i ? "," : "", e->keys[i]);
    rt_tune_config_text(e, config, sizeof config);
    format_ms(e->ms, ms, sizeof ms);
    put_text(line, cap, &pos, "\t%s\t%s\n", config, ms);
    return pos;
}

/* rt_tune_table_format, saying why it failed: TC_ERROR_INVALID_ARGUMENT
 * (an entry that is not valid: the table was changed other than through
 * this file) or TC_ERROR_OUT_OF_MEMORY, with rt_fail. */
static tc_status format_table(const RtTuneTable *t, RtBytes *out) {
    char line[RT_TUNE_MAX_LINE + 64], why[ERR_CAP];
    if (!rt_bytes_append(out, MAGIC "\n", sizeof MAGIC))
        return rt_fail(TC_ERROR_OUT_OF_MEMORY, "out of memory writing the tuning table");
    tc_status st = TC_OK;
    locale_t old = enter_c_locale();
    for (size_t i = 0; i < t->count && st == TC_OK; i++) {
        const RtTuneEntry *e = &t->entries[i];
        size_t n;
        if (!entry_check(e, why, sizeof why))
            st = rt_fail(TC_ERROR_INVALID_ARGUMENT, "tuning table: entry %zu is not valid: %s", i + 1, why);
        else if ((n = format_entry(e, line, sizeof line)) > RT_TUNE_MAX_LINE + 1) /* cannot be: the fields' limits */
            st = rt_fail(TC_ERROR_INVALID_ARGUMENT, "tuning table: entry %zu: line too long", i + 1);
        else if (!rt_bytes_append(out, line, n))
            st = rt_fail(TC_ERROR_OUT_OF_MEMORY, "out of memory writing the tuning table");
    }
    leave_c_locale(old);
    return st;
}

bool rt_tune_table_format(const RtTuneTable *t, RtBytes *out) {
    return format_table(t, out) == TC_OK;
}

/* ---- the parser ---- */

typedef struct Slice {
    const char *p;
    size_t n;
} Slice;

static bool slice_is(Slice s, const char *text) {
    return s.n == strlen(text) && memcmp(s.p, text, s.n) == 0;
}

static bool parse_keys(Slice s, RtTuneEntry *e, char *err) {
    if (slice_is(s, "-"))
        return true;
    for (size_t pos = 0;; pos++) {
        size_t end = next_item(s.p, s.n, pos);
        if (e->num_keys == RT_TUNE_MAX_KEYS) {
            snprintf(err, ERR_CAP, "KEYS: more than %d keys", RT_TUNE_MAX_KEYS);
            return false;
        }
        int r = parse_i64(s.p + pos, end - pos, &e->keys[e->num_keys]);
        e->num_keys++;
        if (r != 0) {
            snprintf(err, ERR_CAP, "KEYS: key %zu %s", e->num_keys,
                     r == -2 ? "is out of range (int64)" : "is not a decimal integer");
            return false;
        }
        if (end == s.n)
            return true;
        pos = end;
    }
}

static bool parse_config(Slice s, RtTuneEntry *e, char *err) {
    if (slice_is(s, "-"))
        return true;
    for (size_t pos = 0;; pos++) {
        size_t end = next_item(s.p, s.n, pos);
        if (e->num_fields == RT_TUNE_MAX_FIELDS) {
            snprintf(err, ERR_CAP, "CONFIG: more than %d pairs", RT_TUNE_MAX_FIELDS);
            return false;
        }
        size_t k = ++e->num_fields;
        RtTuneField *f = &e->fields[k - 1];
        const char *item = s.p + pos, *eq = memchr(item, '=', end - pos);
        if (!eq) {
            snprintf(err, ERR_CAP, "CONFIG: pair %zu is not NAME=VALUE", k);
            return false;
        }
        size_t name_len = (size_t)(eq - item), value_len = end - pos - name_len - 1;
        if (!ident_ok(item, name_len, RT_TUNE_MAX_NAME)) {
            snprintf(err, ERR_CAP, "CONFIG: pair %zu: the name is not an identifier of 1 to %d characters", k,
                     RT_TUNE_MAX_NAME);
            return false;
        }
        memcpy(f->name, item, name_len);
        f->name[name_len] = 0;
        for (size_t j = 0; j + 1 < k; j++)
            if (strcmp(e->fields[j].name, f->name) == 0) {
                snprintf(err, ERR_CAP, "CONFIG: %s given twice", f->name);
                return false;
            }
        Slice v = {eq + 1, value_len};
        int r = 0;
        if (slice_is(v, "true") || slice_is(v, "false")) {
            f->is_bool = true;
            f->value = v.p[0] == 't';
        } else if ((r = parse_i64(v.p, v.n, &f->value)) != 0) {
            snprintf(err, ERR_CAP, "CONFIG: %s: %s", f->name,
                     r == -2 ? "the value is out of range (int64)"
                             : "the value is not a decimal integer, true or false");
            return false;
        }
        if (end == s.n)
            return true;
        pos = end;
    }
}

static bool parse_ms(Slice s, double *out, char *err) {
    char buf[RT_TUNE_MAX_LINE + 1];
    bool ok = s.n >= 1 && s.n < sizeof buf;
    for (size_t i = 0; ok && i < s.n; i++)
        ok = is_digit(s.p[i]) || s.p[i] == '.' || s.p[i] == 'e' || s.p[i] == 'E' || s.p[i] == '+' || s.p[i] == '-';
    char *end = buf;
    double v = 0;
    if (ok) {
        memcpy(buf, s.p, s.n);
        buf[s.n] = 0;
        v = strtod(buf, &end); /* the caller is in the C locale */
    }
    if (!ok || end != buf + s.n)
        snprintf(err, ERR_CAP, "MS: not a decimal number");
    else if (!isfinite(v))
        snprintf(err, ERR_CAP, "MS: not finite");
    else if (!(v > 0))
        snprintf(err, ERR_CAP, "MS: not > 0");
    else {
        *out = v;
        return true;
    }
    return false;
}

/* Copies a checked column into a NUL-terminated field (n < its size). */
static void copy_column(char *dst, Slice s) {
    memcpy(dst, s.p, s.n);
    dst[s.n] = 0;
}

/* One entry line (without its '\n') into e, which is zeroed first. */
static bool parse_entry(const char *line, size_t n, RtTuneEntry *e, char *err) {
    memset(e, 0, sizeof *e);
    Slice col[NUM_COLUMNS];
    size_t count = 0, pos = 0;
    for (;;) {
        const char *tab = memchr(line + pos, '\t', n - pos);
        size_t end = tab ? (size_t)(tab - line) : n;
        if (count < NUM_COLUMNS)
            col[count] = (Slice){line + pos, end - pos};
        count++;
        if (!tab)
            break;
        pos = end + 1;
    }
    if (count != NUM_COLUMNS) {
        snprintf(err, ERR_CAP, "%zu tab-separated fields, expected %d (KIND GPU BUILD HASH KERNEL KEYS CONFIG MS)",
                 count, NUM_COLUMNS);
        return false;
    }
    if (slice_is(col[0], "best"))
        e->kind = RT_TUNE_BEST;
    else if (slice_is(col[0], "time"))
        e->kind = RT_TUNE_TIME;
    else {
        snprintf(err, ERR_CAP, "KIND: expected best or time");
        return false;
    }
    if (!gpu_ok(col[1].p, col[1].n)) {
        snprintf(err, ERR_CAP, "GPU: expected 1 to 255 printable ASCII characters");
        return false;
    }
    if (!build_ok(col[2].p, col[2].n)) {
        snprintf(err, ERR_CAP, "BUILD: expected * or 1 to 64 lowercase hex digits");
        return false;
    }
    if (!hash_ok(col[3].p, col[3].n)) {
        snprintf(err, ERR_CAP, "HASH: expected 64 lowercase hex digits");
        return false;
    }
    if (!ident_ok(col[4].p, col[4].n, 255)) {
        snprintf(err, ERR_CAP, "KERNEL: expected an identifier of at most 255 characters");
        return false;
    }
    copy_column(e->gpu, col[1]);
    copy_column(e->build, col[2]);
    copy_column(e->hash, col[3]);
    copy_column(e->kernel, col[4]);
    return parse_keys(col[5], e, err) && parse_config(col[6], e, err) && parse_ms(col[7], &e->ms, err);
}

/* The parse, in the C locale; on an error t keeps what it parsed so far. */
static tc_status parse_text(const char *text, size_t len, RtTuneTable *t, char *err, size_t *lineno) {
    bool magic = false;
    size_t pos = 0;
    RtTuneEntry e;
    *lineno = 0;
    while (pos < len) {
        const char *nl = memchr(text + pos, '\n', len - pos);
        size_t end = nl ? (size_t)(nl - text) : len, n = end - pos;
        const char *line = text + pos;
        ++*lineno;
        pos = nl ? end + 1 : len;
        if (n > RT_TUNE_MAX_LINE) {
            snprintf(err, ERR_CAP, "longer than %d bytes", RT_TUNE_MAX_LINE);
            return TC_ERROR_INVALID_ARGUMENT;
        }
        if (memchr(line, '\r', n)) {
            snprintf(err, ERR_CAP, "a carriage return (lines end with \\n alone)");
            return TC_ERROR_INVALID_ARGUMENT;
        }
        if (memchr(line, 0, n)) {
            snprintf(err, ERR_CAP, "a NUL byte");
            return TC_ERROR_INVALID_ARGUMENT;
        }
        if (n == 0 || line[0] == '#')
            continue;
        if (!magic) {
            if (n != sizeof MAGIC - 1 || memcmp(line, MAGIC, n) != 0) {
                snprintf(err, ERR_CAP, "not a tuning table: expected \"%s\"", MAGIC);
                return TC_ERROR_INVALID_ARGUMENT;
            }
            magic = true;
            continue;
        }
        if (!parse_entry(line, n, &e, err))
            return TC_ERROR_INVALID_ARGUMENT;
        if (t->count >= RT_TUNE_MAX_ENTRIES) {
            snprintf(err, ERR_CAP, "more than %d entries", RT_TUNE_MAX_ENTRIES);
            return TC_ERROR_INVALID_ARGUMENT;
        }
        if (!grow(t)) {
            snprintf(err, ERR_CAP, "out of memory");
            return TC_ERROR_OUT_OF_MEMORY;
        }
        t->entries[t->count++] = e;
    }
    if (!magic) {
        ++*lineno;
        snprintf(err, ERR_CAP, "not a tuning table: no \"%s\" line", MAGIC);
        return TC_ERROR_INVALID_ARGUMENT;
    }
    return TC_OK;
}

tc_status rt_tune_table_parse(const char *text, size_t len, RtTuneTable *t, char *why, size_t why_cap) {
    if (why && why_cap)
        why[0] = 0;
    if (t->entries || t->count || t->cap) {
        if (why && why_cap)
            snprintf(why, why_cap, "the table to parse into is not empty");
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "rt_tune_table_parse: the table to parse into is not empty");
    }
    if (!text && len)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "rt_tune_table_parse: no text");
    char err[ERR_CAP];
    size_t lineno;
    locale_t old = enter_c_locale();
    tc_status st = parse_text(text, len, t, err, &lineno);
    leave_c_locale(old);
    if (st == TC_OK)
        return TC_OK;
    rt_tune_table_free(t);
    if (why && why_cap)
        snprintf(why, why_cap, "line %zu: %s", lineno, err);
    return rt_fail(st, "line %zu: %s", lineno, err);
}

/* ---- the file ---- */

static bool name_ok(const char *name) {
    return name && *name && !strchr(name, '/') && strcmp(name, ".") != 0 && strcmp(name, "..") != 0;
}

/* dir as a checked descriptor (rt_cache_dir_trusted), or -1 with *missing
 * when it does not exist (only if missing is given), or an error. */

tc_status rt_tune_table_load_file(const char *dir, const char *name, RtTuneTable *t, bool *found) {
    if (found)
        *found = false;
    if (!dir || !name_ok(name))
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tuning table: bad file name '%s' in %s", name ? name : "(null)",
                       dir ? dir : "(null)");
    if (t->entries || t->count || t->cap)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "rt_tune_table_load_file: the table to load into is not empty");
    int dfd;
    bool missing = false;
    tc_status st = rt_cache_open_dir(dir, false, 0, &dfd, &missing);
    if (st != TC_OK || missing)
        return st;
    /* O_NONBLOCK: a FIFO opens at once (and is then refused) instead of waiting for a writer */
    int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    struct stat sb;
    if (fd < 0) {
        int err = errno;
        bool link = err == ELOOP && fstatat(dfd, name, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(sb.st_mode);
        close(dfd);
        if (err == ENOENT)
            return TC_OK;
        if (link)
            return rt_fail(TC_ERROR_IO, "tuning table %s/%s refused: a symbolic link (not followed)", dir, name);
        return rt_fail(TC_ERROR_IO, "cannot open tuning table %s/%s: %s", dir, name, strerror(err));
    }
    close(dfd);
    char why[256];
    if (fstat(fd, &sb) != 0) {
        int err = errno;
        close(fd);
        return rt_fail(TC_ERROR_IO, "cannot stat tuning table %s/%s: %s", dir, name, strerror(err));
    }
    if (!rt_cache_entry_trusted(&sb, geteuid(), why, sizeof why)) {
        close(fd);
        return rt_fail(TC_ERROR_IO, "tuning table %s/%s refused: %s", dir, name, why);
    }
    if (sb.st_size < 0 || (uint64_t)sb.st_size > MAX_FILE_BYTES) {
        close(fd);
        return rt_fail(TC_ERROR_IO, "tuning table %s/%s refused: larger than 64 MiB (%lld bytes)", dir, name,
                       (long long)sb.st_size);
    }
    size_t size = (size_t)sb.st_size, got = 0;
    char *data = malloc(size ? size : 1);
    if (!data) {
        close(fd);
        return rt_fail(TC_ERROR_OUT_OF_MEMORY, "out of memory reading tuning table %s/%s", dir, name);
    }
    while (got < size) {
        ssize_t r = read(fd, data + got, size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int err = errno;
            free(data);
            close(fd);
            return rt_fail(TC_ERROR_IO, "cannot read tuning table %s/%s: %s", dir, name, strerror(err));
        }
        if (r == 0)
            break; /* shrank while we read: what is there is parsed (and likely refused) */
        got += (size_t)r;
    }
    close(fd);
    RtTuneTable parsed = {0};
    st = rt_tune_table_parse(data, got, &parsed, why, sizeof why);
    free(data);
    if (st == TC_ERROR_OUT_OF_MEMORY)
        return rt_fail(st, "out of memory reading tuning table %s/%s", dir, name);
    if (st != TC_OK)
        return rt_fail(TC_ERROR_IO, "tuning table %s/%s refused: %s", dir, name, why);
    *t = parsed;
    if (found)
        *found = true;
    return TC_OK;
}


tc_status rt_tune_table_store_file(const char *dir, const char *name, const RtTuneTable *t) {
    if (!dir || !name_ok(name))
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "tuning table: bad file name '%s' in %s", name ? name : "(null)",
                       dir ? dir : "(null)");
    RtBytes text = {0};
    tc_status st = format_table(t, &text);
    if (st == TC_OK && text.len > MAX_FILE_BYTES)
        st = rt_fail(TC_ERROR_INVALID_ARGUMENT, "tuning table %s/%s: %zu bytes, more than the 64 MiB it may have", dir,
                     name, text.len);
    int dfd = -1;
    if (st != TC_OK || (st = rt_cache_open_dir(dir, false, 0, &dfd, NULL)) != TC_OK) {
        rt_bytes_free(&text);
        return st;
    }
    st = rt_cache_write_file(dfd, dir, name, text.data, text.len);
    rt_bytes_free(&text);
    if (st != TC_OK) {
        close(dfd);
        return st;
    }
    fsync(dfd); /* the rename itself, durable (best effort: the table is written either way) */
    close(dfd);
    return TC_OK;
}
