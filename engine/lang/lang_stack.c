/* lang_stack.c: running the compiler and the readback on a thread with a stack of their own
 * (PGL_STACK_BYTES, lang.h): the deepest syntax trees pgl admits recurse that deep. */
#include <pthread.h>

#include "lang/lang.h"

typedef struct {
    void (*fn)(void *);
    void *arg;
} on_stack_call;

static void *on_stack_thread(void *p) {
    const on_stack_call *call = p;
    call->fn(call->arg);
    return NULL;
}

int pgl_on_stack(void (*fn)(void *), void *arg) {
    on_stack_call call = {fn, arg};
    pthread_attr_t attr;
    pthread_t t;
    if (pthread_attr_init(&attr)) return -1;
    int rc = pthread_attr_setstacksize(&attr, PGL_STACK_BYTES) || pthread_create(&t, &attr, on_stack_thread, &call);
    pthread_attr_destroy(&attr);
    if (rc) return -1;
    return pthread_join(t, NULL) ? -1 : 0;
}

