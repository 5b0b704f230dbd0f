/*
 * nvme.h - one NVMe device: at most queue_depth commands in the device; each pays
 * the command latency L, then its data crosses the device's data path, a FIFO
 * station serving read_mbps (writes cost read_mbps / write_mbps times their size),
 * with a per-command overhead of 1 / iops:
 *     T = Wq(admission) + L + Wq(data) + (bytes * k + rate / iops) / rate
 * With queue_depth 1 the data path is an M/G/1 queue (Pollaczek-Khinchine).
 *
 * Not for: what is read or written (backend/storage.c keeps the blocks).
 */
#ifndef PC_SIM_NVME_H
#define PC_SIM_NVME_H

#include <stdbool.h>

#include "config/topology.h"
#include "port.h"

struct sim_nvme;

struct sim_nvme *nvme_create(struct sim *s, const struct pc_nvme *cfg);
void nvme_destroy(struct sim_nvme *d);
void nvme_io(struct sim_nvme *d, bool write, double bytes, port_done_fn *done, void *arg);
double nvme_utilisation(const struct sim_nvme *d, double elapsed_ns);
double nvme_bytes(const struct sim_nvme *d);

#endif
