/* Custom ops registered with smelt_te_register_op (custom.c). */
#ifndef SMELT_OPS_CUSTOM_H
#define SMELT_OPS_CUSTOM_H

typedef struct op_custom op_custom;

/* The registration of (domain, op_type), or NULL.  A custom node's
 * op_attrs points to it. */
const op_custom *op_custom_find(const char *domain, const char *op_type);

#endif
