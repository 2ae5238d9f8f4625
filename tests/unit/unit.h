/*
 * unit.h — a minimal test harness for the C unit tests.
 *
 * Each tests/unit/test_NAME.c defines TEST(...) functions and one
 * UNIT_SUITE(NAME, test_a, test_b, ...) list; `tilec-unit NAME` runs that suite
 * (CTest runs every suite as its own test). CHECK failures are counted and
 * reported with file and line; a suite fails if any check failed.
 */
#ifndef TILEC_UNIT_H
#define TILEC_UNIT_H

#include <stdio.h>
#include <string.h>

extern int unit_failures;
extern int unit_checks;

#define TEST(name) static void name(void)

#define CHECK(cond)                                                                      \
    do {                                                                                 \
        unit_checks++;                                                                   \
        if (!(cond)) {                                                                   \
            unit_failures++;                                                             \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);     \
        }                                                                                \
    } while (0)

#define CHECK_EQ_INT(a, b)                                                               \
    do {                                                                                 \
        long long _a = (long long)(a), _b = (long long)(b);                              \
        unit_checks++;                                                                   \
        if (_a != _b) {                                                                  \
            unit_failures++;                                                             \
            fprintf(stderr, "%s:%d: CHECK failed: %s == %s (%lld vs %lld)\n", __FILE__, __LINE__, #a, #b, _a, _b); \
        }                                                                                \
    } while (0)

#define CHECK_EQ_STR(a, b)                                                               \
    do {                                                                                 \
        const char *_a = (a), *_b = (b);                                                 \
        unit_checks++;                                                                   \
        if (!_a || !_b || strcmp(_a, _b) != 0) {                                         \
            unit_failures++;                                                             \
            fprintf(stderr, "%s:%d: CHECK failed: %s == %s\n  got:      %s\n  expected: %s\n", __FILE__, \
                    __LINE__, #a, #b, _a ? _a : "(null)", _b ? _b : "(null)");           \
        }                                                                                \
    } while (0)

typedef void (*UnitFn)(void);
typedef struct UnitSuite {
    const char *name;
    const UnitFn *tests;
    int num_tests;
} UnitSuite;

#define UNIT_SUITE(name, ...)                                                            \
    static const UnitFn name##_fns[] = {__VA_ARGS__};                                    \
    const UnitSuite unit_suite_##name = {#name, name##_fns,                \
                                         (int)(sizeof name##_fns / sizeof name##_fns[0])};

#endif
