/* Micro-kernels: the only hand-written fast code, reached from loop IR
 * through IR_STMT_CALL (tensorize).  The emitter copies a kernel's C source
 * into the module once and calls it; buffer arguments become pointers
 * (&buf[index]), the others scalar values. */
#ifndef SMELT_CODEGEN_MICROKERNEL_H
#define SMELT_CODEGEN_MICROKERNEL_H

typedef struct cg_microkernel {
    const char *name;   /* the kernel name used in IR_STMT_CALL */
    const char *c_name; /* the C function the source defines (a C identifier) */
    /* C99 text defining `static void c_name(...)` (or static inline); it may
     * use <math.h>, <string.h>, <stdint.h> and the GNU vector extensions. */
    const char *source;
    /* or NULL and the name of an embedded file holding it (uk/qgemm_u8s8.c,
     * uk_attention_f32.h: embedded with the runtime's sources, C files one
     * can read and compile on their own) */
    const char *embedded;
} cg_microkernel;

typedef struct cg_target cg_target;

/* The built-in kernel with this name, or NULL: its source for target t
 * (t's micro-kernel family), or the x86 family's for t NULL.  The
 * computation is the same in every family; only register blocks differ. */
const cg_microkernel *cg_microkernel_find_for(const cg_target *t, const char *name);
const cg_microkernel *cg_microkernel_find(const char *name);
/* k's C text (source or its embedded file). */
const char *cg_microkernel_text(const cg_microkernel *k);

#endif
