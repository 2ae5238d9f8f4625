/*
 * fuzz_tune_table.c — libFuzzer target for the autotuner's table parser
 * (runtime/tune_table.c).
 *
 * Each input is a table's text, given to rt_tune_table_parse. A refused
 * input must leave the table empty and say which line is wrong. An accepted
 * one must survive the round trip: rt_tune_table_format writes it, the
 * text parses again to an equal table (every field, the time to the bit),
 * and formatting that gives the same text. Then rt_tune_table_find must
 * find each best entry's slot (the first entry of the exact build, else of
 * "*"), and rt_tune_table_put, entry by entry into a new table, must keep
 * one entry per slot, the last one put, each found as the parsed table has
 * it; putting them all again changes nothing. Any crash, sanitizer report,
 * leak or abort() is a bug.
 *
 * With TILEC_FUZZ_TUNE_SEEDS=DIR, LLVMFuzzerInitialize first writes a few
 * valid tables there (comments, both kinds, both builds, the extremes of
 * the numbers, a slot given twice), so that a run starts from text the
 * parser takes (tests/fuzz/run.sh).
 */
#include "runtime/tune.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Entries that find and put are checked on: put is linear in the table. */
#define MAX_CHECKED 256

#define FAIL(...)                                                                                                      \
    do {                                                                                                               \
        fprintf(stderr, "fuzz_tune_table: " __VA_ARGS__);                                                              \
        fputc('\n', stderr);                                                                                           \
        abort();                                                                                                       \
    } while (0)

#define HASH_A "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define HASH_B "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"

static const char *const seeds[] = {
    "tilec-tune 1\n",
    "# tuned on an H200\n\ntilec-tune 1\n"
    "best\tNVIDIA H200\t3f2a9c\t" HASH_A "\tmatmul\t1024,-5,0\tBM=128,BN=64,SPLIT=true\t0.25\n"
    "# between entries\n"
    "best\tNVIDIA H200\t*\t" HASH_A "\tmatmul\t1024,-5,0\tBM=64,BN=64,SPLIT=false\t0.5\n"
    "time\tNVIDIA H200\t3f2a9c\t" HASH_A "\tmatmul\t1024,-5,0\tBM=128,BN=64,SPLIT=true\t0.25\n"
    "time\tNVIDIA H200\t3f2a9c\t" HASH_A "\tmatmul\t1024,-5,0\tSPLIT=true,BN=64,BM=128\t0.2\n"
    "time\tNVIDIA H200\t3f2a9c\t" HASH_A "\tmatmul\t-\t-\t1e-3",
    "tilec-tune 1\n"
    "time\tRTX 4090 (x)\t*\t" HASH_B "\t_k2\t9223372036854775807,-9223372036854775808\tw=-9223372036854775808,"
    "b=true\t12\n"
    "best\t~ !\t0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\t" HASH_B
    "\tK\t1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16\t-\t5e-324\n"
    "best\tG\tf\t" HASH_B "\tk\t-\ta=1,b=2,c=3,d=4,e=5,f=6,g=7,h=8,i=9,j=10,k=11,l=12,m=13,n=14,o=15,p=16,q=17,"
    "r=18,s=19,t=20,u=21,v=22,w=23,x=24,y=25,z=26,A=27,B=28,C=29,D=30,E=31,F=32\t1.7976931348623157e308\n",
    "tilec-tune 1\n"
    "best\tG\t*\t" HASH_A "\tk\t1\tx=1\t1\n"
    "best\tG\t*\t" HASH_A "\tk\t2\tx=2\t2\n"
    "best\tG\t*\t" HASH_A "\tk\t1\tx=3\t3\n"
    "best\tG\tabc\t" HASH_A "\tk\t1\tx=4\t0.1\n",
};

static void write_seed(const char *dir, size_t i, const char *text) {
    char path[1024];
    snprintf(path, sizeof path, "%s/seed-%zu.tune", dir, i);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    size_t n = strlen(text);
    if (fd < 0 || write(fd, text, n) != (ssize_t)n) {
        perror(path);
        abort();
    }
    close(fd);
}

/* Lines at their limits: a comment of RT_TUNE_MAX_LINE bytes, and an entry
 * whose every field is as long as it may be. */
static void write_long_seed(const char *dir, size_t i) {
    static char text[3 * RT_TUNE_MAX_LINE];
    size_t n = (size_t)snprintf(text, sizeof text, "tilec-tune 1\n#");
    memset(text + n, 'c', RT_TUNE_MAX_LINE - 1);
    n += RT_TUNE_MAX_LINE - 1;
    n += (size_t)snprintf(text + n, sizeof text - n, "\nbest\t%0255d\t%s%s\t%s\tk%0254d\t", 0, HASH_A, "", HASH_B, 0);
    for (int k = 0; k < RT_TUNE_MAX_KEYS; k++)
        n += (size_t)snprintf(text + n, sizeof text - n, "%s-9223372036854775808", k ? "," : "");
    for (int f = 0; f < RT_TUNE_MAX_FIELDS; f++)
        n += (size_t)snprintf(text + n, sizeof text - n, "%sf%02d%060d=-9223372036854775808", f ? "," : "\t", f, 0);
    snprintf(text + n, sizeof text - n, "\t1.2345678901234567e-300\n");
    write_seed(dir, i, text);
}

static void write_seeds(const char *dir) {
    size_t i = 0;
    for (; i < sizeof seeds / sizeof seeds[0]; i++)
        write_seed(dir, i, seeds[i]);
    write_long_seed(dir, i);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    const char *dir = getenv("TILEC_FUZZ_TUNE_SEEDS");
    if (dir && *dir)
        write_seeds(dir);
    return 0;
}

/* ---- comparisons, written again here: the checks do not trust tune_table.c's ---- */

static bool keys_equal(const RtTuneEntry *a, const RtTuneEntry *b) {
    if (a->num_keys != b->num_keys)
        return false;
    for (size_t i = 0; i < a->num_keys; i++)
        if (a->keys[i] != b->keys[i])
            return false;
    return true;
}

static bool fields_equal(const RtTuneField *f, const RtTuneField *g) {
    return strcmp(f->name, g->name) == 0 && f->value == g->value && f->is_bool == g->is_bool;
}

static bool entries_equal(const RtTuneEntry *a, const RtTuneEntry *b) {
    if (a->kind != b->kind || strcmp(a->gpu, b->gpu) || strcmp(a->build, b->build) || strcmp(a->hash, b->hash) ||
        strcmp(a->kernel, b->kernel) || !keys_equal(a, b) || a->num_fields != b->num_fields ||
        memcmp(&a->ms, &b->ms, sizeof a->ms) != 0)
        return false;
    for (size_t i = 0; i < a->num_fields; i++)
        if (!fields_equal(&a->fields[i], &b->fields[i]))
            return false;
    return true;
}

/* The same configuration: the same pairs in any order. */
static bool config_same(const RtTuneEntry *a, const RtTuneEntry *b) {
    if (a->num_fields != b->num_fields)
        return false;
    for (size_t i = 0; i < a->num_fields; i++) {
        bool seen = false;
        for (size_t j = 0; j < b->num_fields; j++)
            seen |= fields_equal(&a->fields[i], &b->fields[j]);
        if (!seen)
            return false;
    }
    return true;
}

static bool same_slot(const RtTuneEntry *a, const RtTuneEntry *b) {
    return a->kind == b->kind && !strcmp(a->gpu, b->gpu) && !strcmp(a->build, b->build) && !strcmp(a->hash, b->hash) &&
           keys_equal(a, b) && (a->kind == RT_TUNE_BEST || config_same(a, b));
}

/* ---- the checks ---- */

static void check_entry(const RtTuneEntry *e) {
    if (!(e->ms > 0) || e->ms != e->ms || e->ms > 1.7976931348623157e308 || e->num_keys > RT_TUNE_MAX_KEYS ||
        e->num_fields > RT_TUNE_MAX_FIELDS || !e->gpu[0] || !e->build[0] || strlen(e->hash) != 64 || !e->kernel[0])
        FAIL("a parsed entry out of its bounds");
    char full[RT_TUNE_MAX_LINE], cut[17];
    rt_tune_config_text(e, full, sizeof full);
    rt_tune_config_text(e, cut, sizeof cut);
    if (strlen(full) >= sizeof full - 1 || strncmp(full, cut, sizeof cut - 1) != 0 || strlen(cut) >= sizeof cut)
        FAIL("rt_tune_config_text cut the text wrong: '%s' vs '%s'", full, cut);
    for (size_t i = 0; i < e->num_keys; i++) {
        int64_t v = e->keys[i], b = rt_tune_bucket(v);
        if (v <= 0 || v > ((int64_t)1 << 62) ? b != v : (b < v || (b & (b - 1)) != 0 || (b > 1 && b / 2 >= v)))
            FAIL("rt_tune_bucket(%lld) = %lld", (long long)v, (long long)b);
    }
}

static void check_round_trip(const RtTuneTable *t) {
    RtBytes text = {0}, again = {0};
    if (!rt_tune_table_format(t, &text))
        FAIL("rt_tune_table_format failed on a parsed table");
    if (text.len < 13 || memcmp(text.data, "tilec-tune 1\n", 13) != 0)
        FAIL("the formatted table does not start with its first line");
    RtTuneTable u = {0};
    char why[256];
    if (rt_tune_table_parse((const char *)text.data, text.len, &u, why, sizeof why) != TC_OK)
        FAIL("the formatted table does not parse: %s", why);
    if (u.count != t->count)
        FAIL("the round trip has %zu entries, not %zu", u.count, t->count);
    for (size_t i = 0; i < t->count; i++)
        if (!entries_equal(&t->entries[i], &u.entries[i]))
            FAIL("entry %zu differs after the round trip", i + 1);
    if (!rt_tune_table_format(&u, &again) || again.len != text.len || memcmp(again.data, text.data, text.len) != 0)
        FAIL("formatting the round trip gives other text");
    rt_tune_table_free(&u);
    rt_bytes_free(&text);
    rt_bytes_free(&again);
}

/* find: each best entry's slot is found, the first entry of its exact build. */
static void check_find(const RtTuneTable *t, size_t n) {
    for (size_t i = 0; i < n; i++) {
        const RtTuneEntry *e = &t->entries[i];
        if (e->kind != RT_TUNE_BEST)
            continue;
        const RtTuneEntry *f = rt_tune_table_find(t, e->gpu, e->build, e->hash, e->keys, e->num_keys);
        if (!f || f > e || !same_slot(f, e))
            FAIL("rt_tune_table_find missed entry %zu", i + 1);
        /* a build no entry has: "*" or nothing */
        f = rt_tune_table_find(t, e->gpu, "not-a-build", e->hash, e->keys, e->num_keys);
        if (f && (strcmp(f->build, "*") || strcmp(f->gpu, e->gpu) || strcmp(f->hash, e->hash) || !keys_equal(f, e)))
            FAIL("rt_tune_table_find returned another slot");
        if (!strcmp(e->build, "*") && !f)
            FAIL("rt_tune_table_find missed the \"*\" entry %zu", i + 1);
    }
}

/* put: one entry per slot, the last put; again, nothing changes. */
static void check_put(const RtTuneTable *t, size_t n) {
    RtTuneTable m = {0};
    for (size_t i = 0; i < n; i++)
        if (rt_tune_table_put(&m, &t->entries[i]) != TC_OK)
            FAIL("rt_tune_table_put refused parsed entry %zu: %s", i + 1, tc_last_error());
    if (m.count > n)
        FAIL("rt_tune_table_put made more entries than it was given");
    for (size_t i = 0; i < n; i++) {
        const RtTuneEntry *e = &t->entries[i];
        size_t last = i, held = 0;
        for (size_t j = i + 1; j < n; j++)
            if (same_slot(&t->entries[j], e))
                last = j;
        for (size_t j = 0; j < m.count; j++)
            if (same_slot(&m.entries[j], e)) {
                held++;
                if (!entries_equal(&m.entries[j], &t->entries[last]))
                    FAIL("entry %zu's slot does not hold the last one put", i + 1);
            }
        if (held != 1)
            FAIL("entry %zu's slot is held %zu times", i + 1, held);
        if (e->kind == RT_TUNE_BEST) {
            const RtTuneEntry *f = rt_tune_table_find(&m, e->gpu, e->build, e->hash, e->keys, e->num_keys);
            if (!f || !entries_equal(f, &t->entries[last]))
                FAIL("entry %zu not found after put", i + 1);
        }
    }
    size_t count = m.count;
    for (size_t i = 0; i < count; i++)
        if (rt_tune_table_put(&m, &m.entries[i]) != TC_OK || m.count != count)
            FAIL("putting an entry of the table again changed it");
    RtTuneEntry bad = t->entries[0];
    bad.ms = -bad.ms;
    if (rt_tune_table_put(&m, &bad) != TC_ERROR_INVALID_ARGUMENT || m.count != count)
        FAIL("rt_tune_table_put took an entry with a negative time");
    RtTuneTable merged = {0};
    if (rt_tune_table_merge(&merged, &m) != TC_OK || merged.count != m.count)
        FAIL("rt_tune_table_merge into an empty table lost entries");
    for (size_t i = 0; i < m.count; i++)
        if (!entries_equal(&merged.entries[i], &m.entries[i]))
            FAIL("rt_tune_table_merge changed entry %zu", i + 1);
    rt_tune_table_free(&merged);
    rt_tune_table_free(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    RtTuneTable t = {0};
    char why[96];
    memset(why, 'x', sizeof why);
    tc_status st = rt_tune_table_parse((const char *)data, size, &t, why, sizeof why);
    if (!memchr(why, 0, sizeof why))
        FAIL("why is not NUL-terminated");
    if (st != TC_OK) {
        if (st != TC_ERROR_INVALID_ARGUMENT || t.entries || t.count || t.cap)
            FAIL("a refused table is not left empty (status %d)", (int)st);
        if (strncmp(why, "line ", 5) != 0)
            FAIL("the reason names no line: %s", why);
        return 0;
    }
    if (why[0])
        FAIL("an accepted table has a reason: %s", why);
    for (size_t i = 0; i < t.count; i++)
        check_entry(&t.entries[i]);
    check_round_trip(&t);
    size_t n = t.count < MAX_CHECKED ? t.count : MAX_CHECKED;
    check_find(&t, n);
    if (n)
        check_put(&t, n);
    rt_tune_table_free(&t);
    return 0;
}
