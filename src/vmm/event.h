/* SPDX-License-Identifier: MIT */
/* Every exception the VMM queues for a guest goes through event_inject(). */
#ifndef VMM_EVENT_H
#define VMM_EVENT_H

#include "emulate.h"

struct vcpu;

/*
 * Queues ex as an injected exception (RIP left as it is), CR2 first for
 * #PF, through v->ops. 0 or -errno.
 */
int event_inject(struct vcpu *v, const struct emulate_exception *ex);

#endif
