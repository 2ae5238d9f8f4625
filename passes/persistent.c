/*
 * persistent.c — the pass `persistent`: a kernel runs its launch grid as a
 * loop over tiles, in as many programs as the GPU holds at once
 * (docs/passes.md, "Persistent programs").
 *
 * For a kernel with the attribute `persistent = 1` (or, without the
 * attribute, PassOptions' target.persistent), the body becomes
 *
 *     %pid = program_id {axis = 0}
 *     %np = num_programs {axis = 0}
 *     %tiles = %grid_x * %grid_y * %grid_z
 *     for %tile = %pid, %tiles, %np {persistent = 1} {
 *       %tile_id = ...                // %tile, or its mirror in a full round of odd index
 *       %x = rem %tile_id, %grid_x    // the tile's program ids, x fastest
 *       %y = rem (div %tile_id, %grid_x), %grid_y
 *       %z = div (div %tile_id, %grid_x), %grid_y
 *       barrier                       // the previous tile's readers of shared memory
 *       ... the body, program_id(a) -> x, y, z and num_programs(a) -> %grid_a ...
 *     }
 *     return
 *
 * where %grid_x, %grid_y and %grid_z are three new parameters, i32 with
 * the attribute `launch_grid = 0, 1, 2`, after the runtime parameters and
 * before any tensormap parameter: the grid the caller asked for, which the
 * runtime passes while it launches only as many programs as fit on the GPU
 * at once (tc_kernel_desc.persistent). Tile t is the program the original
 * kernel numbered (x, y, z) with t = x + grid_x (y + grid_y z). The P
 * programs take the tiles in rounds of P, in the order of program ids that
 * the kernel's source chose (a matmul's grouped order, attention's longest
 * query blocks first within a head): program p takes tile k P + p of
 * round k, but in the full rounds of odd k tile k P + P - 1 - p (snake(),
 * %tile_id). Each round is the same set of tiles either way; the reversal
 * pairs a program's long tiles with short ones where the cost falls along
 * the order (causal attention: at 1024 keys, 8 query blocks of 128 rows a
 * head, 132 programs, the most key blocks a program runs drops from 48 to
 * 39, for 34.9 on average).
 *
 * What it is for: the pipeline pass, which runs next, keeps the rings of
 * a warp-specialized loop in the tile loop across tiles, so that the
 * producer warps load the next tile's first stages while the consumers
 * finish this tile (its epilogue: normalization, stores); the barrier
 * pairs and their phases carry over, and the programs' start-up (shared
 * memory set-up, barrier initialization, register reallocation) happens
 * once per SM instead of once per tile.
 *
 * The barrier at the top of each tile keeps one tile's first writes to
 * shared memory (a Q copy, a ring prologue) from landing on bytes that
 * another warp still reads for the previous tile (its epilogue's scratch):
 * within a tile every writer of shared memory is ordered after earlier
 * readers by the program's own barriers, across tiles by this one.
 *
 * A kernel that already has launch_grid parameters is left alone, so the
 * pass may run twice; so is a kernel of thread-block clusters (num_ctas >
 * 1: its programs' ranks follow program_id(0), and a cluster must start
 * together).
 */
#include "passes.h"

#include "target/target.h"

#include <string.h>

typedef struct Persist {
    IrModule *m;
    IrValue *grid[3]; /* the launch_grid parameters */
    IrValue *pid[3];  /* the tile's program ids, computed when first asked for */
    IrValue *tile;    /* the tile loop's induction variable */
    IrValue *above;   /* tile / grid_x, once asked for */
    IrOp *decode_at;  /* where the program ids are computed: before the tile's barrier */
} Persist;

static bool has_launch_grid(const IrFunc *f) {
    for (int i = 0; i < f->body->num_args; i++) {
        const IrValue *a = f->body->args[i];
        if (ir_attr_get(a->num_attrs, a->attrs, "launch_grid"))
            return true;
    }
    return false;
}

/* A new i32 parameter `launch_grid = axis` before the first tensormap
 * parameter (the runtime ones come first, the tensor maps last). */
static IrValue *add_grid_param(IrModule *m, IrFunc *f, int axis) {
    static const char *const names[3] = {"grid_x", "grid_y", "grid_z"};
    IrBlock *b = f->body;
    IrValue *v = ir_func_add_param(f, ir_type_scalar(m, IR_I32), names[axis]);
    int at = 0;
    while (at < b->num_args - 1 && b->args[at]->type->kind != IR_TENSORMAP)
        at++;
    for (int i = b->num_args - 1; i > at; i--) {
        b->args[i] = b->args[i - 1];
        b->args[i]->index = i;
    }
    b->args[at] = v;
    v->index = at;
    IrAttr a = {.name = "launch_grid", .kind = IR_ATTR_INT, .i = axis};
    ir_attrs_set(m, &v->num_attrs, &v->attrs, &a);
    return v;
}

/* Program id `axis` of the tile (x fastest). */
static IrValue *tile_pid(Persist *p, int axis) {
    if (p->pid[axis])
        return p->pid[axis];
    const IrType *i32 = ir_type_scalar(p->m, IR_I32);
    IrBuilder b;
    ir_builder_before(&b, p->decode_at);
    b.loc = p->decode_at->loc;
    IrValue *v;
    if (axis == 0) {
        v = ir_build_binary(&b, IR_OP_REM, i32, p->tile, p->grid[0]);
    } else {
        if (!p->above) /* the tile's row of x: y and z share it */
            p->above = ir_build_binary(&b, IR_OP_DIV, i32, p->tile, p->grid[0]);
        v = ir_build_binary(&b, axis == 1 ? IR_OP_REM : IR_OP_DIV, i32, p->above, p->grid[1]);
    }
    ir_value_set_name(p->m, v, axis == 0 ? "tile_x" : axis == 1 ? "tile_y" : "tile_z");
    return p->pid[axis] = v;
}

/* program_id and num_programs in blk (and nested regions) become the
 * tile's ids and the launch grid. */
static void replace_ids(Persist *p, IrBlock *blk) {
    for (IrOp *op = blk->first, *next; op; op = next) {
        next = op->next;
        for (int r = 0; r < op->num_regions; r++)
            replace_ids(p, op->regions[r]);
        if (op->opc != IR_OP_PROGRAM_ID && op->opc != IR_OP_NUM_PROGRAMS)
            continue;
        int axis = (int)ir_op_get_int(op, "axis", 0);
        if (axis < 0 || axis > 2)
            continue; /* the verifier rejects it */
        IrValue *to = op->opc == IR_OP_PROGRAM_ID ? tile_pid(p, axis) : p->grid[axis];
        IrBlock *scope = op->parent;
        while (scope->parent_op)
            scope = scope->parent_op->parent;
        ir_replace_all_uses(scope, op->results[0], to);
        ir_op_unlink(op);
    }
}

/* The tile a program takes in the iteration whose round-robin tile is iv
 * (pid + k np, the k-th round of np tiles): in the full rounds of odd k
 * the programs take the round's tiles in the reverse order, pid taking
 * k np + np - 1 - pid = iv + np - 1 - 2 pid; the last round, if partial,
 * keeps the plain order (its tiles go to the programs the loop's bounds
 * give one). Each round is the same set of tiles either way. */
static IrValue *snake(IrBuilder *b, IrValue *iv, IrValue *pid, IrValue *np, IrValue *tiles) {
    IrModule *m = b->m;
    const IrType *i32 = ir_type_scalar(m, IR_I32);
    IrValue *one = ir_build_const_int(b, i32, 1);
    IrValue *k = ir_build_binary(b, IR_OP_DIV, i32, iv, np);
    IrValue *odd = ir_build_cmp(b, "eq", ir_build_binary(b, IR_OP_REM, i32, k, ir_build_const_int(b, i32, 2)), one);
    IrValue *left = ir_build_binary(b, IR_OP_SUB, i32, tiles, ir_build_binary(b, IR_OP_MUL, i32, k, np));
    IrValue *full = ir_build_cmp(b, "ge", left, np);
    IrValue *both = ir_build_binary(b, IR_OP_AND, ir_type_scalar(m, IR_I1), odd, full);
    IrValue *span = ir_build_binary(b, IR_OP_SUB, i32, np, one);
    IrValue *twice = ir_build_binary(b, IR_OP_ADD, i32, pid, pid);
    IrValue *rev = ir_build_binary(b, IR_OP_ADD, i32, iv, ir_build_binary(b, IR_OP_SUB, i32, span, twice));
    IrValue *ops[3] = {both, rev, iv};
    IrValue *t = ir_build(b, IR_OP_SELECT, i32, 3, ops);
    ir_value_set_name(m, t, "tile_id");
    return t;
}

static void make_persistent(IrModule *m, IrFunc *f) {
    IrBlock *body = f->body;
    IrOp *ret = body->last;
    if (!ret || ret->opc != IR_OP_RETURN || ret->num_operands)
        return; /* the verifier's business */
    Persist p;
    memset(&p, 0, sizeof p);
    p.m = m;
    for (int a = 0; a < 3; a++)
        p.grid[a] = add_grid_param(m, f, a);

    const IrType *i32 = ir_type_scalar(m, IR_I32);
    IrBuilder b;
    ir_builder_before(&b, body->first);
    b.loc = ret->loc;
    IrOp *first = body->first;
    IrValue *pid = ir_build(&b, IR_OP_PROGRAM_ID, i32, 0, NULL);
    ir_op_set_int(m, pid->def, "axis", 0);
    IrValue *np = ir_build(&b, IR_OP_NUM_PROGRAMS, i32, 0, NULL);
    ir_op_set_int(m, np->def, "axis", 0);
    IrValue *xy = ir_build_binary(&b, IR_OP_MUL, i32, p.grid[0], p.grid[1]);
    IrValue *tiles = ir_build_binary(&b, IR_OP_MUL, i32, xy, p.grid[2]);
    ir_value_set_name(m, tiles, "tiles");
    IrValue *ops[3] = {pid, tiles, np};
    IrOp *loop = ir_op_create(m, IR_OP_FOR, 3, ops, 0, NULL);
    loop->loc = ret->loc;
    ir_op_set_int(m, loop, "persistent", 1);
    ir_op_insert_before(first, loop);
    IrBlock *tb = loop->regions[0];
    IrValue *iv = ir_block_add_arg(m, tb, i32, "tile");

    /* the body moves into the loop */
    for (IrOp *op = first, *next; op != ret; op = next) {
        next = op->next;
        ir_op_unlink(op);
        ir_block_append(tb, op);
    }
    ir_builder_at_end(&b, m, tb);
    b.loc = ret->loc;
    ir_build_op(&b, IR_OP_YIELD, 0, NULL, 0, NULL);
    ir_builder_before(&b, tb->first);
    b.loc = ret->loc;
    p.tile = snake(&b, iv, pid, np, tiles);
    p.decode_at = ir_build_op(&b, IR_OP_BARRIER, 0, NULL, 0, NULL);
    replace_ids(&p, tb);
    ir_func_set_int(f, "persistent", 1);
}

bool pass_persistent(IrModule *m, const PassOptions *opts) {
    for (IrFunc *f = m->first; f; f = f->next)
        if (f->kind == IR_FUNC_KERNEL && ir_func_get_int(f, "persistent", opts->target.persistent) &&
            !has_launch_grid(f) && ir_func_get_int(f, "num_ctas", 1) == 1)
            make_persistent(m, f);
    return true;
}
