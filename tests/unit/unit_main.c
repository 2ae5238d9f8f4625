/*
 * unit_main.c — runs one unit suite by name (`tilec-unit ir`), or all of them.
 * Suites are listed in unit_suites.def, one UNIT(name) line per test_NAME.c.
 */
#include "unit.h"

#include <stdlib.h>

int unit_failures;
int unit_checks;

#define UNIT(name) extern const UnitSuite unit_suite_##name;
#include "unit_suites.def"
#undef UNIT

static const UnitSuite *const suites[] = {
#define UNIT(name) &unit_suite_##name,
#include "unit_suites.def"
#undef UNIT
};

int main(int argc, char **argv) {
    int ran = 0;
    for (size_t i = 0; i < sizeof suites / sizeof suites[0]; i++) {
        const UnitSuite *s = suites[i];
        if (argc > 1 && strcmp(argv[1], s->name) != 0)
            continue;
        for (int t = 0; t < s->num_tests; t++) {
            int before = unit_failures;
            s->tests[t]();
            printf("%s %s.%d\n", unit_failures == before ? "PASS" : "FAIL", s->name, t);
        }
        ran++;
    }
    if (ran == 0) {
        fprintf(stderr, "tilec-unit: no suite named '%s'\n", argc > 1 ? argv[1] : "");
        return 2;
    }
    printf("%d checks, %d failed\n", unit_checks, unit_failures);
    return unit_failures ? 1 : 0;
}
