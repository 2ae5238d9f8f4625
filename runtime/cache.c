/*
 * cache.c — the JIT's disk cache: one file per entry, content-addressed.
 *
 * An entry is named by its key (DIR/<64 hex digits>.entry) and holds one
 * payload, PTX or a cubin, with the kernel metadata a launch needs:
 *
 *     offset  size  field
 *          0     8  magic "TILECv1\0"
 *          8     4  format version (1), little-endian like every integer here
 *         12     4  payload kind: 1 = PTX, 2 = cubin
 *         16    32  key (SHA-256, see jit.c)
 *         48    32  checksum: SHA-256 of every byte from offset 96 to the end
 *         80     4  length of the compiler identity, NUL included
 *         84     4  length of the metadata
 *         88     8  length of the payload
 *         96     …  compiler identity (rt_compiler_id()), metadata (driver/kernel_meta.c), payload
 *
 * Writers never expose a partial file: they write a temp file in the same
 * directory (".tmp-KEY-PID-RANDOM", so two processes never share one),
 * fsync it and rename it over the final name, which is atomic on POSIX
 * filesystems. Two processes that build the same key both rename a
 * complete, identical entry; readers see the old file or the new one.
 *
 * Readers trust nothing: a file that is short, has another magic, format,
 * kind, key or compiler, or whose checksum fails (a torn write on a crashed
 * NFS client, a disk error, a foreign file) is a miss. It is deleted (if it
 * is the user's), so the rebuild that follows replaces it, and it is never
 * loaded.
 *
 * The checksum protects against accidents, not against other users: anyone
 * who can write an entry can compute its checksum, and the payload is code
 * that runs in the caller's process. So the cache is private. Directories
 * are created 0700 and entries 0600 whatever the umask; the directory is
 * used only if it is a real directory (not a symbolic link) owned by the
 * effective user and not writable by group or others, and it is reached
 * through one descriptor (openat) so that it cannot be swapped between the
 * check and the use. An entry is opened without following a symbolic link
 * and without blocking (a FIFO would otherwise hang the JIT), and is read
 * only if it is a regular file owned by the effective user and not writable
 * by group or others. Only files of the effective user are ever deleted.
 *
 * Size: entries are evicted least recently used first once they exceed
 * TILEC_CACHE_MAX_BYTES (rt_cache_max_bytes). A hit sets the entry's times
 * to now, so the oldest mtime is the least recently used. Scanning the
 * directory on every store would cost a readdir and a stat per entry, so
 * DIR/stats keeps a running estimate of the total ("BYTES SCAN_TIME\n",
 * updated under flock by each store): a store adds its size, and only when
 * the estimate passes the cap, the file is missing or unreadable, or the
 * last scan is a day old does it scan. A scan counts the real total,
 * deletes the oldest entries until the total is at most 90% of the cap
 * (so that the next scans are not one store apart), deletes temp files
 * that killed writers left (older than ten minutes: a live writer finishes
 * in far less), and writes the real total back. The estimate only errs
 * high (an overwritten or rejected entry still counts), which costs an
 * early scan, never an unbounded cache.
 */
#include "runtime/runtime.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define STATS_NAME "stats"
#define STALE_TMP_SECONDS (10 * 60)
#define RESCAN_SECONDS (24 * 60 * 60)

/* ---- where ---- */

tc_status rt_cache_dir(char *out, size_t cap, size_t *base) {
    const char *dir = secure_getenv("TILEC_CACHE_DIR");
    size_t keep = 0;
    int n;
    if (dir && *dir) {
        n = snprintf(out, cap, "%s", dir);
    } else if ((dir = secure_getenv("XDG_CACHE_HOME")) && *dir) {
        n = snprintf(out, cap, "%s/tilec", dir);
    } else if ((dir = secure_getenv("HOME")) && *dir) {
        n = snprintf(out, cap, "%s/.cache/tilec", dir);
        keep = strlen(dir); /* tilec never creates a home directory */
    } else {
        return rt_fail(TC_ERROR_IO, "no cache directory: set TILEC_CACHE_DIR (or HOME)");
    }
    if (n < 0 || (size_t)n >= cap)
        return rt_fail(TC_ERROR_IO, "cache directory path too long: %s", dir);
    if (base)
        *base = keep;
    return TC_OK;
}

/* An entry's file name in the directory: HEX.entry. */
static void entry_name(const uint8_t key[32], char name[80]) {
    char hex[65];
    rt_hex(key, 32, hex);
    snprintf(name, 80, "%s.entry", hex);
}

tc_status rt_cache_path(const char *dir, const uint8_t key[32], char *out, size_t cap) {
    char name[80];
    entry_name(key, name);
    int n = snprintf(out, cap, "%s/%s", dir, name);
    if (n < 0 || (size_t)n >= cap)
        return rt_fail(TC_ERROR_IO, "cache path too long: %s/%s", dir, name);
    return TC_OK;
}

uint64_t rt_cache_max_bytes(void) {
    const uint64_t fallback = (uint64_t)1 << 30;
    const char *v = secure_getenv("TILEC_CACHE_MAX_BYTES");
    if (!v || !*v)
        return fallback;
    errno = 0;
    char *end;
    unsigned long long n = strtoull(v, &end, 10);
    if (end == v || errno != 0 || *v == '-')
        return fallback;
    unsigned shift = 0;
    switch (*end) {
    case 'K': case 'k': shift = 10; end++; break;
    case 'M': case 'm': shift = 20; end++; break;
    case 'G': case 'g': shift = 30; end++; break;
    default: break;
    }
    if (*end != 0 || (shift && n > (UINT64_MAX >> shift)))
        return fallback;
    return (uint64_t)n << shift;
}

/* ---- the build identity ---- */

static char build_id[2 * 64 + 1];
static char compiler_id[256];
static pthread_once_t build_id_once = PTHREAD_ONCE_INIT;

/* dl_iterate_phdr's callback: the GNU build-id note of the object whose
 * loaded segments hold `data` (an address in tilec's code). */
static int find_build_id(struct dl_phdr_info *info, size_t size, void *data) {
    uintptr_t addr = (uintptr_t)data;
    bool mine = false;
    for (size_t i = 0; i < info->dlpi_phnum && !mine; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        mine = ph->p_type == PT_LOAD && addr >= lo && addr - lo < ph->p_memsz;
    }
    if (!mine)
        return 0;
    for (size_t i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_NOTE)
            continue;
        size_t align = ph->p_align == 8 ? 8 : 4;
        const uint8_t *p = (const uint8_t *)(info->dlpi_addr + ph->p_vaddr), *end = p + ph->p_memsz;
        while ((size_t)(end - p) >= sizeof(ElfW(Nhdr))) {
            ElfW(Nhdr) n;
            memcpy(&n, p, sizeof n);
            size_t name_off = sizeof n, desc_off = name_off + ((n.n_namesz + align - 1) & ~(align - 1));
            size_t next = desc_off + ((n.n_descsz + align - 1) & ~(align - 1));
            if (next > (size_t)(end - p))
                break;
            if (n.n_type == NT_GNU_BUILD_ID && n.n_namesz == 4 && memcmp(p + name_off, "GNU", 4) == 0 &&
                n.n_descsz > 0 && n.n_descsz <= 64) {
                rt_hex(p + desc_off, n.n_descsz, build_id);
                return 1;
            }
            p += next;
        }
    }
    return 1; /* ours, without a note */
}

static void compute_build_id(void) {
    dl_iterate_phdr(find_build_id, (void *)(uintptr_t)&rt_build_id);
    if (!build_id[0]) {
        /* No note (a linker without --build-id): the version and the time
         * this file was compiled, which changes whenever the runtime is
         * rebuilt, if not on every change elsewhere in the library. */
        uint8_t d[32];
        char text[256];
        snprintf(text, sizeof text, "%s|%s|%s", tc_version(), __DATE__, __TIME__);
        rt_sha256(text, strlen(text), d);
        rt_hex(d, 20, build_id);
    }
    snprintf(compiler_id, sizeof compiler_id, "%s build %s", tc_version(), build_id);
}

const char *rt_build_id(void) {
    pthread_once(&build_id_once, compute_build_id);
    return build_id;
}

const char *rt_compiler_id(void) {
    pthread_once(&build_id_once, compute_build_id);
    return compiler_id;
}

/* ---- encoding ---- */

static uint32_t get_u32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get_u64(const uint8_t *p) {
    return (uint64_t)get_u32(p) | (uint64_t)get_u32(p + 4) << 32;
}

bool rt_cache_encode(RtBytes *out, const uint8_t key[32], RtPayloadKind kind, const void *meta, size_t meta_len,
                     const void *payload, size_t payload_len) {
    const char *compiler = rt_compiler_id();
    size_t compiler_len = strlen(compiler) + 1;
    if (meta_len > UINT32_MAX)
        return false;
    RtSha256 h;
    rt_sha256_init(&h);
    rt_sha256_update(&h, compiler, compiler_len);
    rt_sha256_update(&h, meta, meta_len);
    rt_sha256_update(&h, payload, payload_len);
    uint8_t sum[32];
    rt_sha256_final(&h, sum);
    static const char magic[8] = RT_CACHE_MAGIC;
    return rt_bytes_append(out, magic, 8) && rt_bytes_u32(out, RT_CACHE_FORMAT_VERSION) &&
           rt_bytes_u32(out, (uint32_t)kind) && rt_bytes_append(out, key, 32) && rt_bytes_append(out, sum, 32) &&
           rt_bytes_u32(out, (uint32_t)compiler_len) && rt_bytes_u32(out, (uint32_t)meta_len) &&
           rt_bytes_u64(out, payload_len) && rt_bytes_append(out, compiler, compiler_len) &&
           rt_bytes_append(out, meta, meta_len) && rt_bytes_append(out, payload, payload_len);
}

static bool reject(uint8_t *data, char *why, size_t why_cap, const char *reason) {
    free(data);
    snprintf(why, why_cap, "%s", reason);
    return false;
}

bool rt_cache_decode(uint8_t *data, size_t len, const uint8_t key[32], RtPayloadKind kind, RtCacheEntry *e, char *why,
                     size_t why_cap) {
    memset(e, 0, sizeof *e);
    if (len < RT_CACHE_HEADER_SIZE)
        return reject(data, why, why_cap, "short file");
    if (memcmp(data, RT_CACHE_MAGIC, 8) != 0)
        return reject(data, why, why_cap, "bad magic: not a tilec cache entry");
    if (get_u32(data + 8) != RT_CACHE_FORMAT_VERSION)
        return reject(data, why, why_cap, "other format version");
    if (get_u32(data + 12) != (uint32_t)kind)
        return reject(data, why, why_cap, "other payload kind");
    if (memcmp(data + 16, key, 32) != 0)
        return reject(data, why, why_cap, "key mismatch");
    uint64_t compiler_len = get_u32(data + 80), meta_len = get_u32(data + 84), payload_len = get_u64(data + 88);
    uint64_t body = len - RT_CACHE_HEADER_SIZE;
    if (compiler_len > body || meta_len > body - compiler_len || payload_len != body - compiler_len - meta_len)
        return reject(data, why, why_cap, "lengths do not match the file size (truncated?)");
    const uint8_t *p = data + RT_CACHE_HEADER_SIZE;
    uint8_t sum[32];
    rt_sha256(p, (size_t)body, sum);
    if (memcmp(sum, data + 48, 32) != 0)
        return reject(data, why, why_cap, "checksum mismatch");
    if (compiler_len == 0 || p[compiler_len - 1] != 0 || strcmp((const char *)p, rt_compiler_id()) != 0)
        return reject(data, why, why_cap, "written by another compiler or another build of it");
    e->kind = kind;
    memcpy(e->key, key, 32);
    e->compiler = (const char *)p;
    e->meta = p + compiler_len;
    e->meta_len = (size_t)meta_len;
    e->payload = p + compiler_len + meta_len;
    e->payload_len = (size_t)payload_len;
    e->data = data;
    e->data_len = len;
    return true;
}

void rt_cache_entry_free(RtCacheEntry *e) {
    free(e->data);
    memset(e, 0, sizeof *e);
}

/* ---- trust ---- */

/* Owned by uid and writable by no one else, and of the kind wanted. */
static bool owned_privately(const struct stat *st, bool want_dir, uid_t uid, char *why, size_t why_cap) {
    if (want_dir ? !S_ISDIR(st->st_mode) : !S_ISREG(st->st_mode))
        snprintf(why, why_cap, want_dir ? "not a directory" : "not a regular file");
    else if (st->st_uid != uid)
        snprintf(why, why_cap, "owned by uid %u, not by this user (uid %u)", (unsigned)st->st_uid, (unsigned)uid);
    else if (st->st_mode & (S_IWGRP | S_IWOTH))
        snprintf(why, why_cap, "writable by group or others (mode %04o)", (unsigned)(st->st_mode & 07777));
    else
        return true;
    return false;
}

bool rt_cache_dir_trusted(const struct stat *st, uid_t uid, char *why, size_t why_cap) {
    return owned_privately(st, true, uid, why, why_cap);
}

bool rt_cache_entry_trusted(const struct stat *st, uid_t uid, char *why, size_t why_cap) {
    return owned_privately(st, false, uid, why, why_cap);
}

/* ---- the directory ---- */

/* mkdir -p, leaving the first `base` bytes of dir alone (they must exist).
 * What it creates is 0700 exactly: the umask may take bits away, and
 * fchmodat puts back the owner's. */
static tc_status make_dirs(const char *dir, size_t base) {
    char path[4096];
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof path)
        return rt_fail(TC_ERROR_IO, "bad cache directory '%s'", dir);
    memcpy(path, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if ((path[i] != '/' && path[i] != 0) || i <= base || path[i - 1] == '/')
            continue;
        char c = path[i];
        path[i] = 0;
        if (mkdir(path, 0700) == 0) {
            /* by path (a 0000 directory can't be opened to fchmod it), not through a link */
            fchmodat(AT_FDCWD, path, 0700, AT_SYMLINK_NOFOLLOW);
        } else if (errno != EEXIST) {
            int err = errno;
            return rt_fail(TC_ERROR_IO, "cannot create cache directory %s: %s", path, strerror(err));
        }
        path[i] = c;
    }
    return TC_OK;
}

/* The cache directory as a descriptor, checked (rt_cache_dir_trusted), for
 * openat: the checked directory is the one used. With create, it and its
 * missing parents below `base` are created first. Without, a directory
 * that does not exist sets *missing (no cache yet: not an error). */
tc_status rt_cache_open_dir(const char *dir, bool create, size_t base, int *out, bool *missing) {
    *out = -1;
    if (missing)
        *missing = false;
    if (create) {
        tc_status st = make_dirs(dir, base);
        if (st != TC_OK)
            return st;
    }
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        int err = errno;
        struct stat ls;
        if ((err == ELOOP || err == ENOTDIR) && lstat(dir, &ls) == 0 && S_ISLNK(ls.st_mode))
            return rt_fail(TC_ERROR_IO, "cache directory %s refused: a symbolic link", dir);
        if (!create && missing && (err == ENOENT || err == ENOTDIR)) {
            *missing = true;
            return TC_OK;
        }
        return rt_fail(TC_ERROR_IO, "cannot open cache directory %s: %s", dir, strerror(err));
    }
    struct stat sb;
    char why[128];
    if (fstat(fd, &sb) != 0) {
        int err = errno;
        close(fd);
        return rt_fail(TC_ERROR_IO, "cannot stat cache directory %s: %s", dir, strerror(err));
    }
    if (!rt_cache_dir_trusted(&sb, geteuid(), why, sizeof why)) {
        close(fd);
        return rt_fail(TC_ERROR_IO, "cache directory %s refused: %s", dir, why);
    }
    *out = fd;
    return TC_OK;
}

tc_status rt_cache_prepare(const char *dir, size_t base) {
    int fd;
    tc_status st = rt_cache_open_dir(dir, true, base, &fd, NULL);
    if (st == TC_OK)
        close(fd);
    return st;
}

/* Deletes a file of the directory if it is the effective user's and, when
 * `opened` is given, still the file that was opened (another process may
 * have replaced it since; then the new file is left alone). */
static void remove_own(int dfd, const char *name, const struct stat *opened) {
    struct stat now;
    if (fstatat(dfd, name, &now, AT_SYMLINK_NOFOLLOW) != 0 || now.st_uid != geteuid())
        return;
    if (opened && (now.st_dev != opened->st_dev || now.st_ino != opened->st_ino))
        return;
    unlinkat(dfd, name, 0);
}

tc_status rt_cache_remove(const char *dir, const uint8_t key[32]) {
    int dfd;
    bool missing;
    tc_status st = rt_cache_open_dir(dir, false, 0, &dfd, &missing);
    if (st != TC_OK || missing)
        return st;
    char name[80];
    entry_name(key, name);
    remove_own(dfd, name, NULL);
    close(dfd);
    return TC_OK;
}

/* ---- size: the stats file and the scan ---- */

typedef struct ScanItem {
    char name[80];
    struct timespec mtime;
    uint64_t size;
} ScanItem;

static int cmp_items(const void *a, const void *b) {
    const ScanItem *x = a, *y = b;
    if (x->mtime.tv_sec != y->mtime.tv_sec)
        return x->mtime.tv_sec < y->mtime.tv_sec ? -1 : 1;
    if (x->mtime.tv_nsec != y->mtime.tv_nsec)
        return x->mtime.tv_nsec < y->mtime.tv_nsec ? -1 : 1;
    return strcmp(x->name, y->name);
}

static bool is_entry_name(const char *s) {
    for (int i = 0; i < 64; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return strcmp(s + 64, ".entry") == 0;
}

/* Counts the user's entries, deletes stale temp files, and evicts the
 * least recently used entries (oldest mtime first) when the total is over
 * max, down to 90% of it. max 0: no limit. */
static tc_status scan(int dfd, const char *dir, uint64_t max, RtCacheTrim *out) {
    memset(out, 0, sizeof *out);
    int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        int err = errno;
        if (fd >= 0)
            close(fd);
        return rt_fail(TC_ERROR_IO, "cannot read cache directory %s: %s", dir, strerror(err));
    }
    uid_t uid = geteuid();
    time_t now = time(NULL);
    ScanItem *items = NULL;
    size_t n = 0, cap = 0;
    bool oom = false;
    struct dirent *de;
    while (!oom && (de = readdir(d))) {
        struct stat sb;
        if (strncmp(de->d_name, ".tmp-", 5) == 0) {
            if (fstatat(dfd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) == 0 && sb.st_uid == uid &&
                S_ISREG(sb.st_mode) && now - sb.st_mtime > STALE_TMP_SECONDS && unlinkat(dfd, de->d_name, 0) == 0)
                out->stale_tmps++;
            continue;
        }
        if (!is_entry_name(de->d_name) || fstatat(dfd, de->d_name, &sb, AT_SYMLINK_NOFOLLOW) != 0 ||
            !S_ISREG(sb.st_mode) || sb.st_uid != uid)
            continue;
        if (n == cap) {
            size_t c = cap ? 2 * cap : 64;
            ScanItem *p = realloc(items, c * sizeof *p);
            if (!p) {
                oom = true;
                break;
            }
            items = p;
            cap = c;
        }
        ScanItem *it = &items[n++];
        memcpy(it->name, de->d_name, 64 + sizeof ".entry"); /* is_entry_name: exactly this long */
        it->mtime = sb.st_mtim;
        it->size = (uint64_t)sb.st_size;
        out->bytes_before += it->size;
    }
    closedir(d);
    if (oom) {
        free(items);
        return rt_fail(TC_ERROR_OUT_OF_MEMORY, "out of memory scanning cache directory %s", dir);
    }
    out->entries = n;
    uint64_t total = out->bytes_before;
    if (max && total > max) {
        qsort(items, n, sizeof *items, cmp_items);
        uint64_t target = max - max / 10;
        for (size_t i = 0; i < n && total > target; i++)
            if (unlinkat(dfd, items[i].name, 0) == 0 || errno == ENOENT) {
                total -= items[i].size;
                out->evicted++;
            }
    }
    out->bytes_after = total;
    free(items);
    return TC_OK;
}

/* DIR/stats, opened read-write and locked; -1 if it can't be (then the
 * caller goes without: the estimate is an optimization). */
static int open_stats(int dfd) {
    int fd = openat(dfd, STATS_NAME, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    struct stat sb;
    char why[128];
    if (fstat(fd, &sb) != 0 || !rt_cache_entry_trusted(&sb, geteuid(), why, sizeof why)) {
        close(fd);
        remove_own(dfd, STATS_NAME, NULL);
        return -1;
    }
    if ((sb.st_mode & 07777) != 0600)
        fchmod(fd, 0600);
    while (flock(fd, LOCK_EX) != 0 && errno == EINTR) {
    }
    return fd;
}

static bool read_stats(int fd, uint64_t *bytes, int64_t *scanned) {
    char buf[64];
    ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
    if (n <= 0)
        return false;
    buf[n] = 0;
    unsigned long long b;
    long long t;
    if (sscanf(buf, "%llu %lld", &b, &t) != 2)
        return false;
    *bytes = b;
    *scanned = t;
    return true;
}

static void write_stats(int fd, uint64_t bytes, int64_t scanned) {
    char buf[64];
    int n = snprintf(buf, sizeof buf, "%" PRIu64 " %" PRId64 "\n", bytes, scanned);
    if (ftruncate(fd, 0) == 0 && pwrite(fd, buf, (size_t)n, 0) != n) {
        /* a short stats file reads as unknown: the next store scans */
    }
}

/* After a store of `added` bytes: the estimate, and a scan when due. */
static void account(int dfd, const char *dir, uint64_t added) {
    int fd = open_stats(dfd);
    if (fd < 0)
        return;
    uint64_t max = rt_cache_max_bytes(), bytes = 0;
    int64_t scanned = 0, now = (int64_t)time(NULL);
    bool known = read_stats(fd, &bytes, &scanned);
    bytes += added;
    if (!known || (max && bytes > max) || now - scanned > RESCAN_SECONDS || scanned > now + 60) {
        RtCacheTrim t;
        if (scan(dfd, dir, max, &t) == TC_OK) {
            bytes = t.bytes_after;
            scanned = now;
        }
    }
    write_stats(fd, bytes, scanned);
    close(fd);
}

tc_status rt_cache_trim(const char *dir, uint64_t max_bytes, RtCacheTrim *out) {
    memset(out, 0, sizeof *out);
    int dfd;
    bool missing;
    tc_status st = rt_cache_open_dir(dir, false, 0, &dfd, &missing);
    if (st != TC_OK || missing)
        return st;
    int fd = open_stats(dfd);
    st = scan(dfd, dir, max_bytes, out);
    if (fd >= 0) {
        if (st == TC_OK)
            write_stats(fd, out->bytes_after, (int64_t)time(NULL));
        close(fd);
    }
    close(dfd);
    return st;
}

/* ---- entries ---- */

uint64_t rt_random_u64(void) {
    uint64_t r;
    if (getrandom(&r, sizeof r, GRND_NONBLOCK) == (ssize_t)sizeof r)
        return r;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    static _Thread_local uint64_t counter;
    return ((uint64_t)ts.tv_nsec << 20) ^ (uint64_t)ts.tv_sec ^ (++counter << 40) ^ (uint64_t)(uintptr_t)&r;
}

bool rt_write_all(int fd, const uint8_t *p, size_t n) {
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = EIO;
            return false;
        }
        p += w;
        n -= (size_t)w;
    }
    return true;
}

tc_status rt_cache_write_file(int dfd, const char *dir, const char *name, const void *data, size_t len) {
    char tmp[128];
    snprintf(tmp, sizeof tmp, ".tmp-%.32s-%ld-%016llx", name, (long)getpid(), (unsigned long long)rt_random_u64());
    int fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return rt_fail(TC_ERROR_IO, "cannot create %s/%s: %s", dir, tmp, strerror(errno));
    /* 0600 exactly: the umask may have taken the owner's bits too */
    bool ok = fchmod(fd, 0600) == 0 && rt_write_all(fd, data, len) && fsync(fd) == 0;
    int err = errno;
    if (close(fd) != 0 && ok) {
        ok = false;
        err = errno;
    }
    if (!ok) {
        unlinkat(dfd, tmp, 0);
        return rt_fail(TC_ERROR_IO, "cannot write %s/%s: %s", dir, tmp, strerror(err));
    }
    if (renameat(dfd, tmp, dfd, name) != 0) {
        err = errno;
        unlinkat(dfd, tmp, 0);
        return rt_fail(TC_ERROR_IO, "cannot rename %s/%s to %s/%s: %s", dir, tmp, dir, name, strerror(err));
    }
    return TC_OK;
}

tc_status rt_cache_store(const char *dir, const uint8_t key[32], RtPayloadKind kind, const void *meta, size_t meta_len,
                         const void *payload, size_t payload_len) {
    char path[4096], name[80];
    tc_status st = rt_cache_path(dir, key, path, sizeof path);
    if (st != TC_OK)
        return st;
    int dfd;
    if ((st = rt_cache_open_dir(dir, true, 0, &dfd, NULL)) != TC_OK)
        return st;
    RtBytes bytes = {0};
    if (!rt_cache_encode(&bytes, key, kind, meta, meta_len, payload, payload_len)) {
        rt_bytes_free(&bytes);
        close(dfd);
        return rt_fail(TC_ERROR_OUT_OF_MEMORY, "out of memory encoding cache entry %s", path);
    }
    entry_name(key, name);
    uint64_t size = bytes.len;
    st = rt_cache_write_file(dfd, dir, name, bytes.data, bytes.len);
    rt_bytes_free(&bytes);
    if (st != TC_OK) {
        close(dfd);
        return st;
    }
    account(dfd, dir, size);
    close(dfd);
    return TC_OK;
}

tc_status rt_cache_load(const char *dir, const uint8_t key[32], RtPayloadKind kind, RtCacheEntry *e, bool *hit,
                        char *why, size_t why_cap) {
    memset(e, 0, sizeof *e);
    *hit = false;
    if (why_cap)
        why[0] = 0;
    char path[4096], name[80];
    tc_status st = rt_cache_path(dir, key, path, sizeof path);
    if (st != TC_OK)
        return st;
    int dfd;
    bool missing;
    if ((st = rt_cache_open_dir(dir, false, 0, &dfd, &missing)) != TC_OK || missing)
        return st;
    entry_name(key, name);
    /* O_NONBLOCK: a FIFO opens at once (and is then refused) instead of
     * waiting for a writer; it changes nothing for a regular file */
    int fd = openat(dfd, name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
    struct stat sb;
    if (fd < 0) {
        int err = errno;
        if (err == ELOOP && fstatat(dfd, name, &sb, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(sb.st_mode)) {
            snprintf(why, why_cap, "a symbolic link (not followed)");
            remove_own(dfd, name, &sb);
            err = 0;
        }
        close(dfd);
        if (err == 0 || err == ENOENT)
            return TC_OK;
        return rt_fail(TC_ERROR_IO, "cannot open %s: %s", path, strerror(err));
    }
    if (fstat(fd, &sb) != 0) {
        int err = errno;
        close(fd);
        close(dfd);
        return rt_fail(TC_ERROR_IO, "cannot stat %s: %s", path, strerror(err));
    }
    bool trusted = rt_cache_entry_trusted(&sb, geteuid(), why, why_cap);
    if (!trusted || sb.st_size > (off_t)RT_CACHE_MAX_ENTRY) {
        if (trusted)
            snprintf(why, why_cap, "implausibly large (%lld bytes)", (long long)sb.st_size);
        close(fd);
        remove_own(dfd, name, &sb);
        close(dfd);
        return TC_OK;
    }
    size_t size = (size_t)sb.st_size;
    uint8_t *data = malloc(size + 1); /* + a NUL, so that a PTX payload is a C string */
    if (!data) {
        close(fd);
        close(dfd);
        return rt_fail(TC_ERROR_OUT_OF_MEMORY, "out of memory reading %s", path);
    }
    size_t got = 0;
    while (got < size) {
        ssize_t r = read(fd, data + got, size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int err = errno;
            free(data);
            close(fd);
            close(dfd);
            return rt_fail(TC_ERROR_IO, "cannot read %s: %s", path, strerror(err));
        }
        if (r == 0)
            break; /* shrank while we read: decode rejects it */
        got += (size_t)r;
    }
    data[got] = 0;
    if (!rt_cache_decode(data, got, key, kind, e, why, why_cap)) {
        close(fd);
        remove_own(dfd, name, &sb);
        close(dfd);
        return TC_OK;
    }
    futimens(fd, NULL); /* used now: the eviction keeps the most recently used */
    close(fd);
    close(dfd);
    *hit = true;
    return TC_OK;
}
