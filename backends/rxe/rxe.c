/*
 * rxe.c - Soft-RoCE (the kernel's rdma_rxe) as its own fabric on top of verbs: it
 * finds an rxe device, or creates one on the netdev that carries the node's address
 * (the netlink request `rdma link add NAME type rxe netdev DEV` sends) when the
 * process may, then runs the verbs fabric on it with rxe's limits. Where the kernel
 * has no rdma_rxe it says so in one line.
 *
 * Not for: anything rxe-specific in the data path; that is verbs.
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <ifaddrs.h>
#include <linux/netlink.h>
#include <net/if.h>
#include <rdma/rdma_netlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "builtin.h"
#include "base/log.h"
#include "verbs/verbs.h"

static const struct verbs_quirks rxe_quirks = {
	.name = "rxe",
	.max_rd_atomic = 16,	/* rxe emulates responder resources in software */
	.max_mtu = IBV_MTU_4096,	/* rxe caps the RoCE MTU at 4096 whatever the netdev says */
};

static bool is_rxe(const char *dev)
{
	char path[320];
	struct stat st;

	/* rdma_rxe devices, and only they, have a 'parent' (their netdev) in sysfs. */
	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/parent", dev);
	return !stat(path, &st);
}

/* The rxe device on netdev prefer (NULL or no such device: the first rxe device
 * there is), into name. */
static bool find_rxe(char *name, size_t len, const char *prefer)
{
	/* name holds at least 64 bytes; device names are shorter (IB_DEVICE_NAME_MAX). */
	DIR *d = opendir("/sys/class/infiniband");
	struct dirent *e;
	bool found = false, preferred = false;

	while (d && (e = readdir(d)) && !preferred) {
		char path[320], parent[IF_NAMESIZE + 2] = "";
		FILE *f;

		if (e->d_name[0] == '.' || !is_rxe(e->d_name))
			continue;
		snprintf(path, sizeof(path), "/sys/class/infiniband/%s/parent", e->d_name);
		if (prefer && (f = fopen(path, "re"))) {
			if (fgets(parent, sizeof(parent), f))
				parent[strcspn(parent, "\n")] = 0;
			fclose(f);
			preferred = !strcmp(parent, prefer);
		}
		if (!found || preferred)
			snprintf(name, len, "%.63s", e->d_name);
		found = true;
	}
	if (d)
		closedir(d);
	return found;
}

/* The interface holding IPv4 address addr. */
static bool netdev_of(const char *addr, char *out, size_t len)
{
	struct ifaddrs *ifs, *i;
	struct in_addr want;
	bool found = false;

	if (inet_pton(AF_INET, addr, &want) != 1 || getifaddrs(&ifs))
		return false;
	for (i = ifs; i && !found; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
			continue;
		if (((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr == want.s_addr) {
			snprintf(out, len, "%s", i->ifa_name);
			found = true;
		}
	}
	freeifaddrs(ifs);
	return found;
}

static size_t put_attr(char *buf, size_t off, uint16_t type, const char *s)
{
	struct nlattr *a = (struct nlattr *)(buf + off);
	size_t l = strlen(s) + 1;

	a->nla_type = type;
	a->nla_len = (uint16_t)(NLA_HDRLEN + l);
	memcpy(buf + off + NLA_HDRLEN, s, l);
	return off + NLA_ALIGN(a->nla_len);
}

/* What `rdma link add NAME type rxe netdev DEV` does, over NETLINK_RDMA. */
static int rxe_link_add(const char *name, const char *netdev)
{
	char buf[512] __attribute__((aligned(4))) = { 0 };
	struct nlmsghdr *nh = (struct nlmsghdr *)buf;
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK };
	size_t off = NLMSG_HDRLEN;
	int fd, ret;
	ssize_t r;

	off = put_attr(buf, off, RDMA_NLDEV_ATTR_DEV_NAME, name);
	off = put_attr(buf, off, RDMA_NLDEV_ATTR_LINK_TYPE, "rxe");
	off = put_attr(buf, off, RDMA_NLDEV_ATTR_NDEV_NAME, netdev);
	nh->nlmsg_len = (uint32_t)off;
	nh->nlmsg_type = RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_NEWLINK);
	nh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK;
	nh->nlmsg_seq = 1;
	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_RDMA);
	if (fd < 0)
		return -errno;
	if (sendto(fd, buf, off, 0, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		ret = -errno;
		close(fd);
		return ret;
	}
	r = recv(fd, buf, sizeof(buf), 0);
	close(fd);
	if (r < (ssize_t)NLMSG_HDRLEN)
		return -EIO;
	if (nh->nlmsg_type == NLMSG_ERROR)
		return ((struct nlmsgerr *)NLMSG_DATA(nh))->error;
	return 0;
}

static bool kernel_has_rxe(void)
{
	struct stat st;

	return !stat("/sys/module/rdma_rxe", &st);
}

/* The rxe device for one rail (NULL: a client's) into name: the one the rail
 * names, else the one on the netdev holding address (the node's, or a client's
 * towards the nodes), else any there is, else one created on the rail's netdev (or
 * that one, else lo). */
static int rxe_ensure(const struct pc_rail *rail, const char *address, bool any, char *name,
		      size_t len)
{
	char netdev[PC_NAME_MAX] = "";
	bool has_netdev = address && netdev_of(address, netdev, sizeof(netdev));
	int ret;

	if (rail && rail->device[0] && is_rxe(rail->device)) {
		snprintf(name, len, "%s", rail->device);
		return 0;
	}
	if (any && find_rxe(name, len, has_netdev ? netdev : NULL))
		return 0;
	if (!kernel_has_rxe()) {
		pc_warn("rxe: this kernel has no rdma_rxe (Soft-RoCE) module loaded; load it (modprobe rdma_rxe) or use protocol: tcp");
		return -ENODEV;
	}
	snprintf(name, len, "%s", rail && rail->device[0] ? rail->device : "rxe0");
	if (rail && rail->netdev[0])
		snprintf(netdev, sizeof(netdev), "%s", rail->netdev);
	else if (!has_netdev)
		snprintf(netdev, sizeof(netdev), "lo");
	ret = rxe_link_add(name, netdev);
	if (ret) {
		pc_err("rxe: cannot create %s on %s: %s (creating needs CAP_NET_ADMIN; or run `rdma link add %s type rxe netdev %s` first)",
		       name, netdev, strerror(-ret), name, netdev);
		return ret;
	}
	pc_info("rxe: created %s on %s", name, netdev);
	/* The new device takes a moment to show up with an active port. */
	for (int i = 0; i < 50 && !is_rxe(name); i++)
		usleep(20000);
	return 0;
}

static int rxe_open(struct pc_fabric *f, const struct pc_fabric_params *p)
{
	const struct pc_node *self = f->self < p->topo->nr_nodes ? &p->topo->nodes[f->self] : NULL;
	uint32_t rails = self ? self->nr_rails : 1;
	char name[64] = "", src[INET_ADDRSTRLEN];
	const char *address = self ? self->address :
			      verbs_route_source(p->topo, src, sizeof(src)) ? src : NULL;
	int ret;

	/* A client told its devices ($PC_VERBS_DEVICE) opens those. One rail: its
	 * device (or any rxe) by name. Several: each rail's device must be there (or
	 * be made), and verbs opens them by the rails' names. */
	bool named = !self && getenv("PC_VERBS_DEVICE");

	for (uint32_t r = 0; r < rails && !named; r++) {
		ret = rxe_ensure(self ? &self->rails[r] : NULL, address, rails == 1, name, sizeof(name));
		if (ret)
			return ret;
	}
	for (int i = 0;; i++) {
		ret = verbs_open_with(f, p, &rxe_quirks, rails == 1 && !named ? name : NULL);
		if (ret != -ENODEV || i == 50)
			return ret;
		usleep(20000);	/* its port may not be active yet */
	}
}

/* verbs' table with rxe's name and open: the data path is verbs'. */
const struct pc_fabric_ops rxe_fabric_ops = VERBS_FABRIC_OPS("rxe", rxe_open);
