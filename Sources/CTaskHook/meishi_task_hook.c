#include "meishi_task_hook.h"

extern void *swift_task_enqueueGlobal_hook;

void **meishi_task_enqueue_global_hook(void) { return &swift_task_enqueueGlobal_hook; }
