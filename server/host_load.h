/* host_load.h: the machine's work besides this paragond's (host_load.c). */
#ifndef PGD_HOST_LOAD_H
#define PGD_HOST_LOAD_H

/* Other work at or above this many CPUs makes an estimate say the machine is loaded. */
#define PGD_HOST_LOADED_CPUS 0.5

/* CPUs that other processes (and a hypervisor's steal) kept busy over the window since the
 * reading before (at least a second: a call sooner returns that reading again); -1 until two
 * readings a second apart exist. *cpus receives the machine's online CPUs. Thread-safe. */
double pgd_host_other_cpus(int *cpus);

#endif
