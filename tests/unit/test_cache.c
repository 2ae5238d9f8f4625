/*
 * test_cache.c — the disk cache's privacy and housekeeping: directories
 * created 0700 and entries 0600 whatever the umask; directories and entries
 * that are not the user's own, or that others can write, refused (and
 * foreign files never deleted); symbolic links not followed; a FIFO in
 * place of an entry neither hangs nor loads; tc_jit's choice of a disk
 * cache and its one warning; temp files of killed writers cleaned; the size
 * cap and its least-recently-used eviction; the build id. Every test uses
 * its own temporary directory. (test_runtime.c has the format's tests.)
 *
 * Ownership by another user can only be set up as root (chown); those
 * checks run only then, and say so when they don't. The trust rules
 * themselves are checked for any uid through rt_cache_*_trusted.
 */
#include "runtime/runtime.h"
#include "fs_util.h"
#include "unit.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define OTHER_UID 54321 /* a uid that owns nothing here */

/* ---- helpers ---- */

static bool exists(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0;
}

static unsigned mode_of(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0 ? (unsigned)(st.st_mode & 07777) : 0xffffu;
}

/* Directory entries whose name ends with suffix. */
static int count_suffix(const char *dir, const char *suffix) {
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int n = 0;
    struct dirent *e;
    size_t k = strlen(suffix);
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        n += l >= k && strcmp(e->d_name + l - k, suffix) == 0;
    }
    closedir(d);
    return n;
}

static void key_n(int i, uint8_t key[32]) {
    char s[32];
    snprintf(s, sizeof s, "test-cache-key-%d", i);
    rt_sha256(s, strlen(s), key);
}

static void entry_path(const char *dir, int i, char *out, size_t cap) {
    uint8_t key[32];
    key_n(i, key);
    rt_cache_path(dir, key, out, cap);
}

static tc_status store_n(const char *dir, int i, size_t payload_len) {
    uint8_t key[32];
    key_n(i, key);
    char *payload = malloc(payload_len);
    memset(payload, 'a' + i % 26, payload_len);
    tc_status st = rt_cache_store(dir, key, RT_PAYLOAD_PTX, "m", 1, payload, payload_len);
    free(payload);
    return st;
}

/* Loads entry i: 1 hit, 0 miss, -1 error; why gets the reason of a miss. */
static int load_n(const char *dir, int i, char *why, size_t cap) {
    uint8_t key[32];
    key_n(i, key);
    RtCacheEntry e;
    bool hit = false;
    tc_status st = rt_cache_load(dir, key, RT_PAYLOAD_PTX, &e, &hit, why, cap);
    if (st != TC_OK)
        return -1;
    if (hit)
        rt_cache_entry_free(&e);
    return hit;
}

static void set_mtime(const char *path, time_t t) {
    struct timespec ts[2] = {{t, 0}, {t, 0}};
    utimensat(AT_FDCWD, path, ts, AT_SYMLINK_NOFOLLOW);
}

static time_t mtime_of(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0 ? st.st_mtime : 0;
}

static void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "wb");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static void skip_note(const char *what) {
    fprintf(stderr, "  note: not root: %s not checked\n", what);
}

/* ---- permissions ---- */

TEST(test_cache_modes_under_any_umask) {
    static const mode_t masks[] = {0, 077, 0777};
    for (size_t m = 0; m < sizeof masks / sizeof masks[0]; m++) {
        char *dir = make_temp_dir();
        char sub[600], a[600], entry[1024], stats[700];
        snprintf(a, sizeof a, "%s/a", dir);
        snprintf(sub, sizeof sub, "%s/a/b", dir);
        snprintf(stats, sizeof stats, "%s/stats", sub);
        mode_t old = umask(masks[m]);
        CHECK_EQ_INT(store_n(sub, 1, 100), TC_OK);
        umask(old);
        entry_path(sub, 1, entry, sizeof entry);
        CHECK_EQ_INT(mode_of(a), 0700); /* parents created by tilec too */
        CHECK_EQ_INT(mode_of(sub), 0700);
        CHECK_EQ_INT(mode_of(entry), 0600);
        CHECK_EQ_INT(mode_of(stats), 0600);
        char why[128];
        CHECK_EQ_INT(load_n(sub, 1, why, sizeof why), 1);
        CHECK_EQ_INT(count_suffix(sub, ".entry"), 1);
        remove_tree(dir);
        free(dir);
    }
    /* an existing directory is left as it is (here 0755: not writable by others, used) */
    char *dir = make_temp_dir();
    chmod(dir, 0755);
    CHECK_EQ_INT(rt_cache_prepare(dir, 0), TC_OK);
    CHECK_EQ_INT(mode_of(dir), 0755);
    remove_tree(dir);
    free(dir);
}

TEST(test_cache_trust_rules) {
    struct stat st;
    char why[128];
    memset(&st, 0, sizeof st);
    st.st_uid = 1000;
    st.st_mode = S_IFDIR | 0700;
    CHECK(rt_cache_dir_trusted(&st, 1000, why, sizeof why));
    st.st_mode = S_IFDIR | 0755;
    CHECK(rt_cache_dir_trusted(&st, 1000, why, sizeof why));
    CHECK(!rt_cache_dir_trusted(&st, 1001, why, sizeof why));
    CHECK_EQ_STR(why, "owned by uid 1000, not by this user (uid 1001)");
    st.st_mode = S_IFDIR | 0770;
    CHECK(!rt_cache_dir_trusted(&st, 1000, why, sizeof why));
    CHECK_EQ_STR(why, "writable by group or others (mode 0770)");
    st.st_mode = S_IFDIR | 01777; /* sticky /tmp-like: still others can plant files */
    CHECK(!rt_cache_dir_trusted(&st, 1000, why, sizeof why));
    CHECK(strstr(why, "writable by group or others") != NULL);
    st.st_mode = S_IFREG | 0700;
    CHECK(!rt_cache_dir_trusted(&st, 1000, why, sizeof why));
    CHECK_EQ_STR(why, "not a directory");

    st.st_mode = S_IFREG | 0600;
    CHECK(rt_cache_entry_trusted(&st, 1000, why, sizeof why));
    st.st_mode = S_IFREG | 0644;
    CHECK(rt_cache_entry_trusted(&st, 1000, why, sizeof why));
    CHECK(!rt_cache_entry_trusted(&st, 0, why, sizeof why)); /* root trusts only root's files too */
    CHECK(strstr(why, "owned by uid 1000") != NULL);
    st.st_mode = S_IFREG | 0602;
    CHECK(!rt_cache_entry_trusted(&st, 1000, why, sizeof why));
    CHECK(strstr(why, "writable") != NULL);
    st.st_mode = S_IFIFO | 0600;
    CHECK(!rt_cache_entry_trusted(&st, 1000, why, sizeof why));
    CHECK_EQ_STR(why, "not a regular file");
    st.st_mode = S_IFLNK | 0777;
    CHECK(!rt_cache_entry_trusted(&st, 1000, why, sizeof why));
}

TEST(test_cache_refuses_unsafe_directories) {
    char *dir = make_temp_dir();
    char why[256];
    /* a planted entry in a directory others can write is never read */
    CHECK_EQ_INT(store_n(dir, 1, 64), TC_OK);
    chmod(dir, 0777);
    CHECK_EQ_INT(rt_cache_prepare(dir, 0), TC_ERROR_IO);
    CHECK(strstr(tc_last_error(), "refused: writable by group or others (mode 0777)") != NULL);
    CHECK(strstr(tc_last_error(), dir) != NULL);
    CHECK_EQ_INT(load_n(dir, 1, why, sizeof why), -1);
    CHECK_EQ_INT(store_n(dir, 2, 64), TC_ERROR_IO);
    CHECK_EQ_INT(count_suffix(dir, ".entry"), 1); /* neither read nor written nor deleted */
    chmod(dir, 0720);
    CHECK_EQ_INT(rt_cache_prepare(dir, 0), TC_ERROR_IO);
    chmod(dir, 0700);
    CHECK_EQ_INT(load_n(dir, 1, why, sizeof why), 1);

    /* a symbolic link as the directory itself */
    char link[600];
    snprintf(link, sizeof link, "%s-link", dir);
    CHECK_EQ_INT(symlink(dir, link), 0);
    CHECK_EQ_INT(rt_cache_prepare(link, 0), TC_ERROR_IO);
    CHECK(strstr(tc_last_error(), "a symbolic link") != NULL);
    CHECK_EQ_INT(load_n(link, 1, why, sizeof why), -1);
    unlink(link);

    /* another user's directory */
    if (geteuid() == 0) {
        CHECK_EQ_INT(chown(dir, OTHER_UID, OTHER_UID), 0);
        CHECK_EQ_INT(rt_cache_prepare(dir, 0), TC_ERROR_IO);
        CHECK(strstr(tc_last_error(), "owned by uid 54321, not by this user (uid 0)") != NULL);
        CHECK_EQ_INT(load_n(dir, 1, why, sizeof why), -1);
        CHECK_EQ_INT(chown(dir, 0, 0), 0);
    } else {
        skip_note("a directory owned by another uid");
    }

    /* the home directory is never created; what is below it is */
    char home[600], below[700];
    snprintf(home, sizeof home, "%s/no-home", dir);
    snprintf(below, sizeof below, "%s/.cache/tilec", home);
    CHECK_EQ_INT(rt_cache_prepare(below, strlen(home)), TC_ERROR_IO);
    CHECK(!exists(home));
    mkdir(home, 0755);
    CHECK_EQ_INT(rt_cache_prepare(below, strlen(home)), TC_OK);
    CHECK_EQ_INT(mode_of(below), 0700);
    remove_tree(dir);
    free(dir);
}

/* The choice tc_jit makes, and its single warning. */
typedef struct Warnings {
    int count;
    char last[512];
} Warnings;

static void warn_line(void *user, const char *line) {
    Warnings *w = user;
    w->count++;
    snprintf(w->last, sizeof w->last, "%s", line);
}

TEST(test_jit_disk_cache_choice) {
    char *saved[3];
    const char *names[3] = {"TILEC_CACHE_DIR", "XDG_CACHE_HOME", "HOME"};
    for (int i = 0; i < 3; i++)
        saved[i] = getenv(names[i]) ? strdup(getenv(names[i])) : NULL;
    char *dir = make_temp_dir();
    Warnings w = {0};
    RtLogger log = {warn_line, &w, NULL};
    bool warned = false;
    char out[4096];

    chmod(dir, 0777);
    setenv("TILEC_CACHE_DIR", dir, 1);
    CHECK(!rt_jit_disk_cache(&log, &warned, out, sizeof out));
    CHECK(!rt_jit_disk_cache(&log, &warned, out, sizeof out));
    CHECK(!rt_jit_disk_cache(&log, &warned, out, sizeof out));
    CHECK_EQ_INT(w.count, 1); /* once per context, not once per compile */
    CHECK(warned);
    CHECK(strstr(w.last, dir) != NULL);
    CHECK(strstr(w.last, "refused: writable by group or others (mode 0777); caching in memory only") != NULL);

    chmod(dir, 0700); /* fixed: used again, and nothing more is logged */
    CHECK(rt_jit_disk_cache(&log, &warned, out, sizeof out));
    CHECK_EQ_STR(out, dir);
    CHECK_EQ_INT(w.count, 1);

    /* the default location with a home directory that does not exist */
    char home[600];
    snprintf(home, sizeof home, "%s/gone", dir);
    unsetenv("TILEC_CACHE_DIR");
    unsetenv("XDG_CACHE_HOME");
    setenv("HOME", home, 1);
    warned = false;
    CHECK(!rt_jit_disk_cache(&log, &warned, out, sizeof out));
    CHECK_EQ_INT(w.count, 2);
    CHECK(strstr(w.last, "cannot create cache directory") != NULL);
    CHECK(!exists(home));
    /* ... and one that does */
    mkdir(home, 0700);
    CHECK(rt_jit_disk_cache(&log, &warned, out, sizeof out));
    char want[700];
    snprintf(want, sizeof want, "%s/.cache/tilec", home);
    CHECK_EQ_STR(out, want);
    CHECK_EQ_INT(mode_of(want), 0700);

    for (int i = 0; i < 3; i++) {
        if (saved[i])
            setenv(names[i], saved[i], 1);
        else
            unsetenv(names[i]);
        free(saved[i]);
    }
    remove_tree(dir);
    free(dir);
}

/* ---- entries that are not what they seem ---- */

TEST(test_cache_symlink_entry_not_followed) {
    char *dir = make_temp_dir();
    char *elsewhere = make_temp_dir();
    char why[256], planted[1024], entry[1024], target[1024];
    /* a valid entry for key 1, outside the cache, linked into it */
    CHECK_EQ_INT(store_n(elsewhere, 1, 64), TC_OK);
    entry_path(elsewhere, 1, target, sizeof target);
    entry_path(dir, 1, entry, sizeof entry);
    CHECK_EQ_INT(symlink(target, entry), 0);
    CHECK_EQ_INT(load_n(dir, 1, why, sizeof why), 0);
    CHECK(strstr(why, "symbolic link") != NULL);
    CHECK(!exists(entry)); /* the user's own link is deleted ... */
    CHECK(exists(target)); /* ... not what it points to */
    /* a dangling one */
    snprintf(planted, sizeof planted, "%s/nothing", elsewhere);
    CHECK_EQ_INT(symlink(planted, entry), 0);
    CHECK_EQ_INT(load_n(dir, 1, why, sizeof why), 0);
    CHECK(strstr(why, "symbolic link") != NULL);
    remove_tree(dir);
    remove_tree(elsewhere);
    free(dir);
    free(elsewhere);
}

TEST(test_cache_fifo_entry_does_not_hang) {
    char *dir = make_temp_dir();
    char why[256], entry[1024];
    entry_path(dir, 1, entry, sizeof entry);
    CHECK_EQ_INT(mkfifo(entry, 0600), 0);
    alarm(20); /* a blocking open would end the test here, as a failure */
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    CHECK_EQ_INT(load_n(dir, 1, why, sizeof why), 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    alarm(0);
    CHECK(t1.tv_sec - t0.tv_sec < 5);
    CHECK_EQ_STR(why, "not a regular file");
    CHECK(!exists(entry));
    /* the rebuild's store replaces it */
    CHECK_EQ_INT(mkfifo(entry, 0600), 0);
    CHECK_EQ_INT(store_n(dir, 1, 32), TC_OK);
    CHECK_EQ_INT(load_n(dir, 1, why, sizeof why), 1);
    remove_tree(dir);
    free(dir);
}

TEST(test_cache_untrusted_entries) {
    char *dir = make_temp_dir();
    char why[256], entry[1024];
    entry_path(dir, 1, entry, sizeof entry);
    /* the user's own entry that others may write: refused and deleted */
    CHECK_EQ_INT(store_n(dir, 1, 64), TC_OK);
    chmod(entry, 0666);
    CHECK_EQ_INT(load_n(dir, 1, why, sizeof why), 0);
    CHECK_EQ_STR(why, "writable by group or others (mode 0666)");
    CHECK(!exists(entry));
    /* group-readable is still the user's: used */
    CHECK_EQ_INT(store_n(dir, 1, 64), TC_OK);
    chmod(entry, 0644);
    CHECK_EQ_INT(load_n(dir, 1, why, sizeof why), 1);
    /* another user's entry, checksum and all: refused, and left alone */
    if (geteuid() == 0) {
        CHECK_EQ_INT(chown(entry, OTHER_UID, OTHER_UID), 0);
        CHECK_EQ_INT(load_n(dir, 1, why, sizeof why), 0);
        CHECK_EQ_STR(why, "owned by uid 54321, not by this user (uid 0)");
        CHECK(exists(entry));
        /* nor does a scan count or evict it */
        RtCacheTrim t;
        CHECK_EQ_INT(rt_cache_trim(dir, 1, &t), TC_OK);
        CHECK_EQ_INT(t.entries, 0);
        CHECK(exists(entry));
        /* a store replaces it by rename (the directory is the user's) */
        CHECK_EQ_INT(store_n(dir, 1, 64), TC_OK);
        CHECK_EQ_INT(load_n(dir, 1, why, sizeof why), 1);
    } else {
        skip_note("an entry owned by another uid");
    }
    /* a directory in place of an entry: a miss, not an error */
    entry_path(dir, 2, entry, sizeof entry);
    mkdir(entry, 0700);
    CHECK_EQ_INT(load_n(dir, 2, why, sizeof why), 0);
    CHECK_EQ_STR(why, "not a regular file");
    remove_tree(dir);
    free(dir);
}

/* ---- housekeeping ---- */

TEST(test_cache_stale_temp_files) {
    char *dir = make_temp_dir();
    char old_tmp[700], fresh_tmp[700], stats[700];
    snprintf(old_tmp, sizeof old_tmp, "%s/.tmp-0123456789abcdef-1-00", dir);
    snprintf(fresh_tmp, sizeof fresh_tmp, "%s/.tmp-0123456789abcdef-2-00", dir);
    snprintf(stats, sizeof stats, "%s/stats", dir);
    write_text(old_tmp, "half an entry");
    write_text(fresh_tmp, "an entry being written");
    set_mtime(old_tmp, time(NULL) - 3600);
    set_mtime(fresh_tmp, time(NULL) - 60);
    RtCacheTrim t;
    CHECK_EQ_INT(rt_cache_trim(dir, 0, &t), TC_OK);
    CHECK_EQ_INT(t.stale_tmps, 1);
    CHECK(!exists(old_tmp));
    CHECK(exists(fresh_tmp)); /* another process may still be writing it */

    /* a store scans when the last scan is a day old, and cleans them too */
    CHECK_EQ_INT(store_n(dir, 1, 100), TC_OK);
    write_text(old_tmp, "half an entry");
    set_mtime(old_tmp, time(NULL) - 3600);
    CHECK_EQ_INT(store_n(dir, 2, 100), TC_OK);
    CHECK(exists(old_tmp)); /* scanned a moment ago: not yet */
    write_text(stats, "300 1\n");
    CHECK_EQ_INT(store_n(dir, 3, 100), TC_OK);
    CHECK(!exists(old_tmp));
    CHECK(exists(fresh_tmp));
    /* the scan wrote the real total and its time */
    FILE *f = fopen(stats, "r");
    unsigned long long bytes = 0;
    long long when = 0;
    CHECK(f && fscanf(f, "%llu %lld", &bytes, &when) == 2);
    if (f)
        fclose(f);
    CHECK(bytes > 300 && bytes < 1000);
    CHECK(when > time(NULL) - 100);
    remove_tree(dir);
    free(dir);
}

TEST(test_cache_max_bytes_env) {
    char *old = getenv("TILEC_CACHE_MAX_BYTES") ? strdup(getenv("TILEC_CACHE_MAX_BYTES")) : NULL;
    unsetenv("TILEC_CACHE_MAX_BYTES");
    CHECK_EQ_INT(rt_cache_max_bytes(), 1ull << 30);
    static const struct {
        const char *text;
        unsigned long long want;
    } cases[] = {{"0", 0},           {"12345", 12345},   {"12K", 12288},       {"5M", 5ull << 20},
                 {"2g", 2ull << 30}, {"", 1ull << 30},   {"abc", 1ull << 30},  {"-1", 1ull << 30},
                 {"10X", 1ull << 30}, {"1K5", 1ull << 30}, {"99999999999999999999", 1ull << 30},
                 {"17179869184G", 1ull << 30}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        setenv("TILEC_CACHE_MAX_BYTES", cases[i].text, 1);
        CHECK_EQ_INT(rt_cache_max_bytes(), cases[i].want);
    }
    if (old)
        setenv("TILEC_CACHE_MAX_BYTES", old, 1);
    else
        unsetenv("TILEC_CACHE_MAX_BYTES");
    free(old);
}

TEST(test_cache_lru_eviction) {
    char *old = getenv("TILEC_CACHE_MAX_BYTES") ? strdup(getenv("TILEC_CACHE_MAX_BYTES")) : NULL;
    unsetenv("TILEC_CACHE_MAX_BYTES");
    char *dir = make_temp_dir();
    char path[5][1024], why[256];
    time_t now = time(NULL);
    for (int i = 0; i < 5; i++) {
        CHECK_EQ_INT(store_n(dir, i, 1000), TC_OK);
        entry_path(dir, i, path[i], sizeof path[i]);
        set_mtime(path[i], now - 1000 + 100 * i); /* 0 oldest, 4 newest */
    }
    struct stat st;
    CHECK_EQ_INT(stat(path[0], &st), 0);
    uint64_t size = (uint64_t)st.st_size;
    /* a hit makes 0 the most recently used */
    CHECK_EQ_INT(load_n(dir, 0, why, sizeof why), 1);
    CHECK(mtime_of(path[0]) >= now);

    /* no limit: nothing goes */
    RtCacheTrim t;
    CHECK_EQ_INT(rt_cache_trim(dir, 0, &t), TC_OK);
    CHECK(t.entries == 5 && t.evicted == 0 && t.bytes_before == 5 * size && t.bytes_after == 5 * size);
    /* within the cap: nothing goes */
    CHECK_EQ_INT(rt_cache_trim(dir, 5 * size, &t), TC_OK);
    CHECK_EQ_INT(t.evicted, 0);
    /* over it: least recently used first, down to 90% of the cap */
    CHECK_EQ_INT(rt_cache_trim(dir, 3 * size + size / 2, &t), TC_OK);
    CHECK_EQ_INT(t.evicted, 2);
    CHECK_EQ_INT(t.bytes_after, 3 * size);
    CHECK(exists(path[0]) && !exists(path[1]) && !exists(path[2]) && exists(path[3]) && exists(path[4]));

    /* through the stores: the estimate passes the cap, the store scans and evicts */
    char cap[32];
    snprintf(cap, sizeof cap, "%llu", (unsigned long long)(4 * size + size / 2));
    setenv("TILEC_CACHE_MAX_BYTES", cap, 1);
    for (int i = 5; i < 8; i++) {
        CHECK_EQ_INT(store_n(dir, i, 1000), TC_OK);
        set_mtime(path[0], now - 2000); /* 0, 3, 4 older than the new ones */
    }
    /* store 5 makes 4 entries (under 4.5: no scan); store 6 makes 5, over the
     * cap: the scan evicts 0 (now the oldest) down to 4 <= 90% of 4.5; store
     * 7 likewise evicts 3 */
    CHECK_EQ_INT(count_suffix(dir, ".entry"), 4);
    CHECK(!exists(path[0]) && !exists(path[3]) && exists(path[4]));
    for (int i = 5; i < 8; i++)
        CHECK_EQ_INT(load_n(dir, i, why, sizeof why), 1);
    if (old)
        setenv("TILEC_CACHE_MAX_BYTES", old, 1);
    else
        unsetenv("TILEC_CACHE_MAX_BYTES");
    free(old);
    remove_tree(dir);
    free(dir);
}

/* ---- the build id ---- */

TEST(test_build_id) {
    const char *id = rt_build_id();
    size_t n = strlen(id);
    CHECK(n >= 16 && n % 2 == 0);
    CHECK_EQ_INT(strspn(id, "0123456789abcdef"), n);
    CHECK(rt_build_id() == id); /* computed once */
    const char *c = rt_compiler_id();
    CHECK(strncmp(c, tc_version(), strlen(tc_version())) == 0);
    CHECK(strstr(c, id) != NULL);
    /* entries carry it: one written by another build of the same version is refused */
    RtBytes b = {0};
    uint8_t key[32];
    key_n(1, key);
    CHECK(rt_cache_encode(&b, key, RT_PAYLOAD_PTX, "m", 1, "x", 1));
    CHECK(b.len > RT_CACHE_HEADER_SIZE + strlen(c));
    uint8_t *p = b.data + RT_CACHE_HEADER_SIZE + strlen(c) - 1;
    *p = *p == '0' ? '1' : '0'; /* another build id, same length */
    uint8_t sum[32];
    rt_sha256(b.data + RT_CACHE_HEADER_SIZE, b.len - RT_CACHE_HEADER_SIZE, sum);
    memcpy(b.data + 48, sum, 32);
    RtCacheEntry e;
    char why[128];
    CHECK(!rt_cache_decode(b.data, b.len, key, RT_PAYLOAD_PTX, &e, why, sizeof why)); /* frees b.data */
    CHECK(strstr(why, "another build") != NULL);
}

UNIT_SUITE(cache, test_cache_modes_under_any_umask, test_cache_trust_rules, test_cache_refuses_unsafe_directories,
           test_jit_disk_cache_choice, test_cache_symlink_entry_not_followed, test_cache_fifo_entry_does_not_hang,
           test_cache_untrusted_entries, test_cache_stale_temp_files, test_cache_max_bytes_env,
           test_cache_lru_eviction, test_build_id)
