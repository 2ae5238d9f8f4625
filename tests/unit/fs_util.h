/*
 * fs_util.h — temporary directories for the unit suites that touch the
 * disk (test_runtime.c, test_cache.c).
 */
#ifndef TILEC_FS_UTIL_H
#define TILEC_FS_UTIL_H

/* A new directory under $TMPDIR (else /tmp), malloc'd path; NULL on failure. */
char *make_temp_dir(void);
/* Removes dir and everything below it, making unreadable folders readable first. */
void remove_tree(const char *dir);

#endif
