/*
 * check.c — the checks of the public API's option records that every entry
 * point taking them makes (tc_compile, tc_opt, tc_jit, tc_aot_generate), so
 * that each bad value is refused once, with one message.
 */
#include "base/base.h"

tc_status rt_check_specs(const char *fn, const char *what, const tc_param_spec *specs, size_t n) {
    if (n && !specs)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: %s is NULL with a count of %zu", fn, what, n);
    for (size_t i = 0; i < n; i++) {
        if (!specs[i].name)
            return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: %s[%zu].name is NULL", fn, what, i);
        if (!tc_is_pow2(specs[i].divisibility))
            return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: %s[%zu].divisibility %lld (%s) must be a power of two >= 1",
                           fn, what, i, (long long)specs[i].divisibility, specs[i].name);
    }
    return TC_OK;
}

tc_status rt_check_options(const char *fn, const tc_options *o) {
    if ((int)o->emit < (int)TC_EMIT_AST || (int)o->emit > (int)TC_EMIT_SIGNATURE)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT,
                       "%s: opt->emit %d is not a tc_emit value (TC_EMIT_AST .. TC_EMIT_SIGNATURE)", fn, (int)o->emit);
    if (o->num_warps != 0 && (!tc_is_pow2(o->num_warps) || o->num_warps > TC_MAX_NUM_WARPS))
        return rt_fail(TC_ERROR_INVALID_ARGUMENT,
                       "%s: opt->num_warps %d must be 0 (the default, %d) or a power of two from 1 to %d", fn,
                       o->num_warps, TC_DEFAULT_NUM_WARPS, TC_MAX_NUM_WARPS);
    if (o->num_stages < 0 || o->num_stages > TC_MAX_NUM_STAGES)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: opt->num_stages %d must be from 0 (the default, %d) to %d", fn,
                       o->num_stages, TC_DEFAULT_NUM_STAGES, TC_MAX_NUM_STAGES);
    if (o->min_programs_per_sm < 0 || o->min_programs_per_sm > TC_MAX_PROGRAMS_PER_SM)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: opt->min_programs_per_sm %d must be from 0 (no bound) to %d", fn,
                       o->min_programs_per_sm, TC_MAX_PROGRAMS_PER_SM);
    int threads = 32 * (o->num_warps ? o->num_warps : TC_DEFAULT_NUM_WARPS);
    if (o->min_programs_per_sm * threads > TC_MAX_THREADS_PER_SM)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT,
                       "%s: opt->min_programs_per_sm %d: that many programs of %d threads exceed the %d an SM holds", fn,
                       o->min_programs_per_sm, threads, TC_MAX_THREADS_PER_SM);
    return rt_check_specs(fn, "opt->params", o->params, o->num_params);
}

tc_status rt_check_constexprs(const char *fn, const tc_constexpr *cx, size_t num_cx) {
    if (num_cx && !cx)
        return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: the constexpr array is NULL with a count of %zu", fn, num_cx);
    for (size_t i = 0; i < num_cx; i++) {
        const char *name = cx[i].name ? cx[i].name : "";
        if (!cx[i].name)
            return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: constexpr %zu has a NULL name", fn, i);
        switch (cx[i].kind) {
        case TC_CONSTEXPR_INT:
        case TC_CONSTEXPR_FLOAT: break;
        case TC_CONSTEXPR_BOOL:
            if (cx[i].i != 0 && cx[i].i != 1)
                return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: constexpr %s: a TC_CONSTEXPR_BOOL is 0 or 1, not %lld",
                               fn, name, (long long)cx[i].i);
            break;
        case TC_CONSTEXPR_DTYPE:
            if (cx[i].i < TC_DTYPE_I1 || cx[i].i > TC_DTYPE_F8E5M2)
                return rt_fail(TC_ERROR_INVALID_ARGUMENT, "%s: constexpr %s: %lld is not a tc_dtype", fn, name,
                               (long long)cx[i].i);
            break;
        default:
            return rt_fail(TC_ERROR_INVALID_ARGUMENT,
                           "%s: constexpr %s: kind %d is not a tc_constexpr_kind (INT, FLOAT, BOOL, DTYPE)", fn, name,
                           (int)cx[i].kind);
        }
    }
    return TC_OK;
}

