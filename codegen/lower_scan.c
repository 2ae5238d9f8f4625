/*
 * lower_scan.c — scan {axis, reverse} on any distributed layout, read off
 * its LinearLayout, with the op's own combine region f.
 *
 * The axis coordinate's bits are done one at a time from the lowest
 * (tg_scan_plan): before step j every element holds the scan of its aligned
 * block of 2^j elements along the axis up to itself (its prefix) and the
 * combination of the whole block (its total). Step j pairs each block with
 * the one that differs in bit j; of the two, the one that comes first in the
 * scan's order (bit j clear, or set with reverse) is `first`:
 *
 *     prefix' = f(total of first, prefix)    elements of the second block
 *     prefix' = prefix                       elements of the first block
 *     total'  = f(total of first, total of second)   both
 *
 * which keeps f's arguments in order (f need not commute) for any order of
 * the bits among registers, lanes and warps. The basis that flips bit j
 * says where the partner block lives:
 *
 *   register  another register of the same thread: no data movement;
 *   lane      shfl.sync.bfly with that lane bit as the mask;
 *   warp      through scratch: barrier, every thread stores its totals at
 *             [k][thread] (k counts the totals it holds), barrier, and loads
 *             the partner warp's (thread ^ 32 << bit); in rounds of at most
 *             the plan's warp_slots totals, so that scratch stays small.
 *
 * Totals are per block, so a thread keeps one for each register whose axis
 * register bits done so far are clear (the others in its block share it):
 * a lane or warp step moves one value per block, not per element. The
 * lowest axis bits, when registers hold them (a thread's consecutive
 * elements, the usual case), are done first as a plain running combination
 * along each run of the thread's elements: one f per element. Lane and
 * warp steps compute both candidates and select on the thread's own bit;
 * every thread runs the same instructions, so the shuffles stay converged.
 * f is lowered anew at each use (cg_lower_combine): a step costs one f per
 * element of the second blocks and one per total.
 *
 * Worked example: cumsum along axis 1 of 64x64 f32 in #blocked<spt = [1, 4],
 * tpw = [2, 16], wpc = [4, 1]>: axis bits 0, 1 are registers (0,1) (0,2)
 * (in-thread: 3 adds along each row's 4 elements), bits 2..5 the lanes
 * (0,4) .. (0,32) (4 shuffles of each row's total), and no warp moves
 * along the axis: no shared memory.
 */
#include "lower.h"

#include <string.h>

bool cg_lower_scan(Cg *cg, IrOp *op) {
    const IrType *t = op->operands[0]->type;
    const IrType *elem = t->elem;
    int axis = (int)ir_op_get_int(op, "axis", 0);
    bool reverse = ir_op_get_int(op, "reverse", 0) != 0;
    const LinearLayout *ll = cg_ll(cg, t, op);
    if (!ll)
        return false;
    TgScanPlan plan;
    const char *why = "?";
    if (axis < 0 || axis >= ll->rank || !tg_scan_plan(ll, axis, cg->num_warps, ir_type_bytes(elem), &plan, &why))
        return cg_error(cg, op, "internal error: cannot scan along axis %d of this layout: %s", axis, why);
    CgVal *src = cg_get(cg, op->operands[0]);
    int n = src->n;
    LLVMValueRef *pre = ARENA_ARRAY(&cg->arena, LLVMValueRef, n);
    LLVMValueRef *tot = ARENA_ARRAY(&cg->arena, LLVMValueRef, n);
    LLVMValueRef *other = ARENA_ARRAY(&cg->arena, LLVMValueRef, n);
    memcpy(pre, src->v, sizeof(LLVMValueRef) * (size_t)n);
    memcpy(tot, src->v, sizeof(LLVMValueRef) * (size_t)n);
    LLVMBuilderRef b = cg->b;
    int threads = 32 * cg->num_warps, eb = ir_type_bytes(elem);
    unsigned done = 0; /* register bits of the axis done: tot[r] is kept for r & done == 0 */

    /* The lowest axis bits held in registers: a plain running combination
     * over each run of the thread's consecutive elements. */
    int j0 = 0;
    while (j0 < plan.steps && plan.in[j0] == LL_REG)
        done |= 1u << plan.bit[j0++];
    for (int run = 0; j0 && run < n; run++) {
        if (run & done)
            continue;
        LLVMValueRef acc = NULL;
        for (int s = 0; s < 1 << j0; s++) {
            int k = reverse ? (1 << j0) - 1 - s : s, r = run; /* the run's k-th element along the axis */
            for (int j = 0; j < j0; j++)
                r |= (k >> j & 1) << plan.bit[j];
            if (!s) {
                acc = pre[r];
                continue;
            }
            if (!(acc = cg_lower_combine(cg, op, acc, pre[r])))
                return false;
            pre[r] = acc;
        }
        tot[run] = acc;
    }

    for (int j = j0; j < plan.steps; j++) {
        int in = plan.in[j], bit = plan.bit[j];
        if (in == LL_REG) {
            unsigned m = 1u << bit;
            for (int r = 0; r < n; r++)
                if (((r & m) != 0) != reverse) {
                    LLVMValueRef f = cg_lower_combine(cg, op, tot[(r ^ m) & ~done], pre[r]);
                    if (!f)
                        return false;
                    pre[r] = f;
                }
            for (int r = 0; r < n; r++)
                if (!(r & (done | m))) {
                    LLVMValueRef lo = tot[r], hi = tot[r | m];
                    LLVMValueRef f = reverse ? cg_lower_combine(cg, op, hi, lo) : cg_lower_combine(cg, op, lo, hi);
                    if (!f)
                        return false;
                    tot[r] = f;
                }
            done |= m;
            continue;
        }
        /* The partner block's totals, from another lane or warp. */
        if (in == LL_LANE) {
            for (int r = 0; r < n; r++)
                if (!(r & done))
                    other[r] = cg_shfl_xor(cg, tot[r], 1 << bit);
        } else {
            /* rounds of at most warp_slots totals: [k][thread] */
            /* this thread's slot and its mate's (the warp bit flipped), in bytes */
            int64_t base = cg_scratch_base(op);
            LLVMValueRef mine = LLVMBuildAdd(b, LLVMBuildMul(b, cg->tid, cg_i32(cg, eb), ""), cg_i32(cg, base), "");
            LLVMValueRef mate = LLVMBuildXor(b, cg->tid, cg_i32(cg, 32 << bit), "");
            LLVMValueRef theirs = LLVMBuildAdd(b, LLVMBuildMul(b, mate, cg_i32(cg, eb), ""), cg_i32(cg, base), "");
            for (int first = 0, last = 0;; first = last) {
                while (first < n && (first & done))
                    first++;
                if (first == n)
                    break;
                last = first;
                cg_barrier(cg);
                for (int k = 0; last < n && k < plan.warp_slots; last++)
                    if (!(last & done)) {
                        LLVMValueRef off = LLVMBuildAdd(b, mine, cg_i32(cg, (int64_t)k++ * threads * eb), "");
                        cg_smem_store(cg, tot[last], elem, off);
                    }
                cg_barrier(cg);
                for (int r = first, k = 0; r < last; r++)
                    if (!(r & done)) {
                        LLVMValueRef off = LLVMBuildAdd(b, theirs, cg_i32(cg, (int64_t)k++ * threads * eb), "");
                        other[r] = cg_smem_load(cg, elem, off);
                    }
            }
        }
        /* Is this thread's block the second in the scan's order? */
        LLVMValueRef id = in == LL_LANE ? cg->lane : cg->warp;
        LLVMValueRef set = LLVMBuildICmp(b, LLVMIntNE, LLVMBuildAnd(b, id, cg_i32(cg, 1 << bit), ""), cg_i32(cg, 0), "");
        LLVMValueRef second = reverse ? LLVMBuildNot(b, set, "") : set;
        for (int r = 0; r < n; r++) {
            LLVMValueRef f = cg_lower_combine(cg, op, other[r & ~done], pre[r]);
            if (!f)
                return false;
            pre[r] = LLVMBuildSelect(cg->b, second, f, pre[r], "");
        }
        for (int r = 0; r < n; r++)
            if (!(r & done)) {
                LLVMValueRef x = LLVMBuildSelect(cg->b, second, other[r], tot[r], "");
                LLVMValueRef y = LLVMBuildSelect(cg->b, second, tot[r], other[r], "");
                LLVMValueRef f = cg_lower_combine(cg, op, x, y);
                if (!f)
                    return false;
                tot[r] = f;
            }
    }
    CgVal *res = cg_new_val(cg, n, ll);
    memcpy(res->v, pre, sizeof(LLVMValueRef) * (size_t)n);
    cg_set(cg, op->results[0], res);
    return true;
}
