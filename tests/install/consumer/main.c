/*
 * A program that uses an installed tilec, as another project would: built
 * once through find_package(tilec) (CMakeLists.txt beside this file) and once
 * with `pkg-config --cflags --libs tilec` (tests/install/run.sh). It compiles
 * the installed standard library's softmax to PTX and checks the result and
 * the versions of the headers and of the library.
 *
 *   consumer TILE_DIR
 */
#include <tilec/tilec.h>

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: consumer TILE_DIR\n");
        return 2;
    }
    char want[64];
    snprintf(want, sizeof want, "tilec %s ", TC_VERSION_STRING);
    if (strncmp(tc_version(), want, strlen(want)) != 0) {
        fprintf(stderr, "consumer: headers say %s, the library says %s\n", TC_VERSION_STRING, tc_version());
        return 1;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/softmax.tile", argv[1]);
    tc_source src;
    if (tc_source_read_file(path, &src) != TC_OK) {
        fprintf(stderr, "consumer: cannot read %s: %s\n", path, tc_last_error());
        return 1;
    }
    tc_target target = {"sm_90a"};
    tc_compiler *cc = NULL;
    tc_diagnostics *diags = NULL;
    tc_binary *bin = NULL;
    tc_options opt;
    tc_options_init(&opt);
    opt.emit = TC_EMIT_PTX;
    tc_status st = tc_compiler_create(&target, &cc);
    if (st == TC_OK)
        st = tc_diagnostics_create(&diags);
    if (st == TC_OK)
        st = tc_compile(cc, &src, "softmax_fwd", NULL, 0, &opt, &bin, diags);
    int rc = 1;
    if (st != TC_OK)
        fprintf(stderr, "consumer: %s%s %s\n", diags ? tc_diagnostics_text(diags) : "", tc_status_string(st),
                tc_last_error());
    else if (!strstr(tc_binary_text(bin, NULL), ".visible .entry softmax_fwd("))
        fprintf(stderr, "consumer: no softmax_fwd entry in the PTX\n");
    else {
        printf("consumer: %s compiled softmax_fwd to %zu bytes of PTX\n", tc_version(), strlen(tc_binary_text(bin, NULL)));
        rc = 0;
    }
    tc_binary_destroy(bin);
    tc_diagnostics_destroy(diags);
    tc_compiler_destroy(cc);
    tc_source_free(&src);
    return rc;
}
