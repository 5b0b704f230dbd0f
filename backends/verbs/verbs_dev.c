/*
 * verbs_dev.c - RDMA devices for this node's rails, one protection domain each, the
 * GID to address peers with, and memory registration with the least access asked.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/log.h"
#include "verbs.h"

/* The RoCE v2 GID of this node's IPv4 address (::ffff:a.b.c.d), when it has one. */
static bool gid_of_ipv4(const char *address, union ibv_gid *gid)
{
	struct in_addr a;

	if (!address || inet_pton(AF_INET, address, &a) != 1)
		return false;
	memset(gid, 0, sizeof(*gid));
	gid->raw[10] = 0xff;
	gid->raw[11] = 0xff;
	memcpy(&gid->raw[12], &a, 4);
	return true;
}

static bool ipv4_mapped(const union ibv_gid *g)
{
	static const uint8_t prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return !memcmp(g->raw, prefix, sizeof(prefix));
}

/* Pick the GID index: RoCE v2 for this node's address (a client's: the one it
 * reaches the nodes from); without one (a rail on another subnet), an IPv4 RoCE v2
 * GID, since both ends of a RoCE v2 path must be of one IP version and topologies
 * give IPv4 addresses; else any RoCE v2 GID; else 0 (InfiniBand). Notes the GID's
 * netdev. */
static int pick_gid(struct verbs_dev *d, const char *address)
{
	struct ibv_gid_entry tab[128];
	union ibv_gid want;
	bool have_want = gid_of_ipv4(address, &want);
	ssize_t n = ibv_query_gid_table(d->ctx, tab, 128, 0);
	ssize_t pick = -1, v4 = -1, any = -1;

	for (ssize_t i = 0; i < n && pick < 0; i++) {
		if (tab[i].port_num != d->port || tab[i].gid_type != IBV_GID_TYPE_ROCE_V2)
			continue;
		if (have_want && !memcmp(&tab[i].gid, &want, sizeof(want)))
			pick = i;
		if (v4 < 0 && ipv4_mapped(&tab[i].gid))
			v4 = i;
		if (any < 0)
			any = i;
	}
	if (pick < 0)
		pick = v4 >= 0 ? v4 : any;
	d->netdev[0] = 0;
	if (pick < 0)
		return 0;
	if (tab[pick].ndev_ifindex)
		if_indextoname(tab[pick].ndev_ifindex, d->netdev);
	return (int)tab[pick].gid_index;
}

/* The port's state, MTU and GID, from the device. */
static int port_query(struct verbs_dev *d, const char *address)
{
	struct ibv_port_attr pa;

	if (ibv_query_port(d->ctx, d->port, &pa))
		return -errno ? -errno : -EIO;
	d->up = pa.state == IBV_PORT_ACTIVE;
	d->lid = pa.lid;
	d->mtu = pa.active_mtu;
	if (!d->up)
		return 0;
	d->gid_index = pick_gid(d, address);
	if (ibv_query_gid(d->ctx, d->port, d->gid_index, &d->gid))
		return -EIO;
	return 0;
}

/* The address this node's GIDs are picked by: its own, or a client's route source. */
static const char *self_address(const struct verbs_fabric *vf)
{
	if (vf->base.self < vf->base.topo->nr_nodes)
		return vf->base.topo->nodes[vf->base.self].address;
	return vf->route_src[0] ? vf->route_src : NULL;
}

bool verbs_route_source(const struct pc_topology *t, char *out, size_t len)
{
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(4791) };
	struct sockaddr_in from;
	socklen_t fl = sizeof(from);
	bool ok = false;
	uint32_t i;
	int fd;

	for (i = 0; i < t->nr_nodes; i++)
		if (inet_pton(AF_INET, t->nodes[i].address, &to.sin_addr) == 1)
			break;
	if (i == t->nr_nodes)
		return false;
	/* connecting a datagram socket routes it and sends nothing */
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return false;
	if (!connect(fd, (struct sockaddr *)&to, sizeof(to)) &&
	    !getsockname(fd, (struct sockaddr *)&from, &fl))
		ok = inet_ntop(AF_INET, &from.sin_addr, out, (socklen_t)len) != NULL;
	close(fd);
	return ok;
}

static int open_dev(struct verbs_dev *d, struct ibv_device *dev, const char *address)
{
	struct ibv_port_attr pa;
	int ret = -ENODEV;

	snprintf(d->name, sizeof(d->name), "%s", ibv_get_device_name(dev));
	d->ctx = ibv_open_device(dev);
	if (!d->ctx)
		return -errno ? -errno : -ENODEV;
	if (ibv_query_device(d->ctx, &d->attr))
		goto err;
	for (uint8_t p = 1; p <= d->attr.phys_port_cnt && !d->port; p++)
		if (!ibv_query_port(d->ctx, p, &pa) && pa.state == IBV_PORT_ACTIVE)
			d->port = p;
	if (!d->port) {
		pc_warn("verbs: device %s has no active port", d->name);
		goto err;
	}
	ret = port_query(d, address);
	if (ret)
		goto err;
	d->pd = ibv_alloc_pd(d->ctx);
	if (!d->pd) {
		ret = -ENOMEM;
		goto err;
	}
	return 0;
err:
	ibv_close_device(d->ctx);
	d->ctx = NULL;
	d->port = 0;
	return ret;
}

static void close_dev(struct verbs_dev *d)
{
	if (d->pd)
		ibv_dealloc_pd(d->pd);
	if (d->ctx)
		ibv_close_device(d->ctx);
	memset(d, 0, sizeof(*d));
}

/* Whether the device's chosen GID is this IPv4 address's. */
static bool dev_has_address(const struct verbs_dev *d, const char *address)
{
	union ibv_gid want;

	return gid_of_ipv4(address, &want) && !memcmp(&d->gid, &want, sizeof(want));
}

bool verbs_rail_refresh(struct verbs_fabric *vf, uint32_t r)
{
	struct verbs_dev *d = &vf->dev[r];

	if (port_query(d, self_address(vf)))
		d->up = false;
	if (d->up)
		__atomic_fetch_or(&vf->rails_up, 1u << r, __ATOMIC_RELAXED);
	else
		__atomic_fetch_and(&vf->rails_up, ~(1u << r), __ATOMIC_RELAXED);
	return d->up;
}

void verbs_rails_log(struct verbs_fabric *vf)
{
	static const char *const mtus[] = { "?", "256", "512", "1024", "2048", "4096" };

	pthread_mutex_lock(&vf->rail_lock);
	for (uint32_t r = 0; r < vf->nr_rails; r++) {
		const struct verbs_dev *d = &vf->dev[r];
		char gid[INET6_ADDRSTRLEN] = "?";

		inet_ntop(AF_INET6, d->gid.raw, gid, sizeof(gid));
		pc_info("verbs: rail %u on %s port %u (netdev %s): gid %s (index %d, %s), mtu %s, %s",
			r, d->name, d->port, d->netdev[0] ? d->netdev : "none", gid, d->gid_index,
			d->netdev[0] ? (ipv4_mapped(&d->gid) ? "RoCE v2, IPv4-mapped" : "RoCE v2") :
				       "InfiniBand",
			d->mtu < sizeof(mtus) / sizeof(mtus[0]) ? mtus[d->mtu] : "?",
			d->up ? "active" : "down");
	}
	pthread_mutex_unlock(&vf->rail_lock);
}

/* A device with an active port, as the rails name them or the first one found. */
int verbs_devs_open(struct verbs_fabric *vf, const char *want_device)
{
	const struct pc_topology *t = vf->base.topo;
	const struct pc_node *self = vf->base.self != PC_PEER_NONE ? &t->nodes[vf->base.self] : NULL;
	const char *names[PC_MAX_RAILS];
	char env[PC_MAX_RAILS * IBV_SYSFS_NAME_MAX];
	struct ibv_device **list;
	uint32_t nwant = 0;
	int n, ret = 0;

	if (want_device)
		names[nwant++] = want_device;
	else if (self)
		for (uint32_t r = 0; r < self->nr_rails; r++)
			if (self->rails[r].device[0])
				names[nwant++] = self->rails[r].device;
	/* A client's rails (it has no node to list them): $PC_VERBS_DEVICE, one device
	 * name per rail, comma-separated, in the order the nodes list theirs. */
	if (!nwant && getenv("PC_VERBS_DEVICE")) {
		snprintf(env, sizeof(env), "%s", getenv("PC_VERBS_DEVICE"));
		for (char *save = NULL, *tok = strtok_r(env, ",", &save); tok && nwant < PC_MAX_RAILS;
		     tok = strtok_r(NULL, ",", &save))
			names[nwant++] = tok;
	}
	list = ibv_get_device_list(&n);
	if (!list || n <= 0) {
		if (list)
			ibv_free_device_list(list);
		return -ENODEV;
	}
	/* Unnamed, a device with an active port: the one holding the node's address
	 * (a client's: the one it reaches the nodes from), as another may not reach
	 * the peers, else the first. */
	if (!self && !verbs_route_source(t, vf->route_src, sizeof(vf->route_src)))
		vf->route_src[0] = 0;
	if (!nwant && self_address(vf))
		for (int i = 0; i < n && !vf->nr_rails; i++)
			if (!open_dev(&vf->dev[0], list[i], self_address(vf))) {
				if (dev_has_address(&vf->dev[0], self_address(vf)))
					vf->nr_rails = 1;
				else
					close_dev(&vf->dev[0]);
			}
	if (!nwant && !vf->nr_rails) {
		for (int i = 0; i < n && !vf->nr_rails; i++)
			if (!open_dev(&vf->dev[0], list[i], self_address(vf)))
				vf->nr_rails = 1;
		ret = vf->nr_rails ? 0 : -ENODEV;
	}
	for (uint32_t w = 0; w < nwant && !ret; w++) {
		int i;

		for (i = 0; i < n && strcmp(ibv_get_device_name(list[i]), names[w]); i++)
			;
		if (i == n) {
			pc_warn("verbs: no RDMA device named %s", names[w]);
			ret = -ENODEV;
			break;
		}
		ret = open_dev(&vf->dev[vf->nr_rails], list[i], self_address(vf));
		if (!ret)
			vf->nr_rails++;
	}
	ibv_free_device_list(list);
	if (ret)
		verbs_devs_close(vf);
	for (uint32_t r = 0; r < vf->nr_rails; r++)
		vf->rails_up |= 1u << r;	/* open_dev took active ports only */
	return ret;
}

void verbs_devs_close(struct verbs_fabric *vf)
{
	for (uint32_t r = 0; r < vf->nr_rails; r++)
		close_dev(&vf->dev[r]);
	vf->nr_rails = 0;
	vf->rails_up = 0;
}

/* The least access a region needs: remote writes and atomics also need local write. */
unsigned verbs_access(unsigned a)
{
	unsigned v = 0;

	if (a & PC_ACCESS_REMOTE_READ)
		v |= IBV_ACCESS_REMOTE_READ;
	if (a & PC_ACCESS_REMOTE_WRITE)
		v |= IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_LOCAL_WRITE;
	if (a & PC_ACCESS_REMOTE_ATOMIC)
		v |= IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_LOCAL_WRITE;
	return v;
}

int verbs_mr_add(struct verbs_fabric *vf, struct pc_region *r)
{
	struct verbs_mr m = { 0 };
	int ret;

	pthread_mutex_lock(&vf->mr_lock);
	if (vf->nr_mrs == VERBS_MAX_REGIONS) {
		ret = -ENOSPC;
		goto out;
	}
	ret = region_table_add(&vf->regions, r, pc_env_random(vf->base.env));
	if (ret)
		goto out;
	m.key = r->key;
	m.access = r->access;
	for (uint32_t i = 0; i < vf->nr_rails; i++) {
		m.mr[i] = ibv_reg_mr(vf->dev[i].pd, r->addr, r->len,
				     (int)(verbs_access(r->access) | IBV_ACCESS_LOCAL_WRITE));
		if (!m.mr[i]) {
			ret = errno ? -errno : -ENOMEM;
			while (i--)
				ibv_dereg_mr(m.mr[i]);
			region_table_del(&vf->regions, r->key);
			goto out;
		}
	}
	vf->mrs[vf->nr_mrs++] = m;
out:
	pthread_mutex_unlock(&vf->mr_lock);
	return ret;
}

void verbs_mr_del(struct verbs_fabric *vf, struct pc_region *r)
{
	pthread_mutex_lock(&vf->mr_lock);
	for (uint32_t i = 0; i < vf->nr_mrs; i++) {
		if (vf->mrs[i].key != r->key)
			continue;
		for (uint32_t k = 0; k < vf->nr_rails; k++)
			ibv_dereg_mr(vf->mrs[i].mr[k]);
		vf->mrs[i] = vf->mrs[--vf->nr_mrs];
		break;
	}
	region_table_del(&vf->regions, r->key);
	pthread_mutex_unlock(&vf->mr_lock);
}

uint32_t verbs_lkey(struct verbs_fabric *vf, const struct pc_region *r, uint32_t rail)
{
	uint32_t lkey = 0;

	pthread_mutex_lock(&vf->mr_lock);
	for (uint32_t i = 0; i < vf->nr_mrs; i++)
		if (vf->mrs[i].key == r->key)
			lkey = vf->mrs[i].mr[rail]->lkey;
	pthread_mutex_unlock(&vf->mr_lock);
	return lkey;
}
