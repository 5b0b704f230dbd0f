/*
 * verbs_events.c - the devices' asynchronous events, on one thread per fabric: a
 * port that goes down (link lost, netdev down, device fatal) takes its rail out of
 * rails_up, so that the next post to each peer reconnects over the rails left; a
 * port that comes back (or whose GID table changed) is queried again and its rail
 * used again. QP events need nothing here: the failed op's completion reports them
 * to the post that owns the QP.
 *
 * Not for: the data path, which only reads rails_up.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "base/log.h"
#include "verbs.h"

static void rail_event(struct verbs_fabric *vf, uint32_t r, enum ibv_event_type type)
{
	uint32_t was = __atomic_load_n(&vf->rails_up, __ATOMIC_RELAXED) & (1u << r);
	struct verbs_dev *d = &vf->dev[r];
	union ibv_gid gid;
	int gid_index;
	bool up;

	pthread_mutex_lock(&vf->rail_lock);
	gid = d->gid;
	gid_index = d->gid_index;
	up = type != IBV_EVENT_DEVICE_FATAL && type != IBV_EVENT_PORT_ERR &&
	     verbs_rail_refresh(vf, r);
	if (!up) {
		d->up = false;
		__atomic_fetch_and(&vf->rails_up, ~(1u << r), __ATOMIC_RELAXED);
	}
	/* Connections made before this are rebuilt on their next post. */
	if (!!was != up || gid_index != d->gid_index || memcmp(&gid, &d->gid, sizeof(gid)))
		__atomic_fetch_add(&vf->rails_gen, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&vf->rail_lock);
	if (!!was == up)
		return;
	pc_stat_add(&vf->base.stats.rail_changes, 1);
	if (up) {
		pc_info("verbs: rail %u (%s port %u) is back; peers are reconnected over it",
			r, vf->dev[r].name, vf->dev[r].port);
		verbs_rails_log(vf);
	} else {
		pc_warn("verbs: rail %u (%s port %u) is down (%s); its traffic moves to the other rails",
			r, vf->dev[r].name, vf->dev[r].port, ibv_event_type_str(type));
	}
}

static void drain(struct verbs_fabric *vf, uint32_t r)
{
	struct ibv_async_event ev;

	while (!ibv_get_async_event(vf->dev[r].ctx, &ev)) {
		enum ibv_event_type type = ev.event_type;
		bool ours = type == IBV_EVENT_DEVICE_FATAL ||
			    ((type == IBV_EVENT_PORT_ERR || type == IBV_EVENT_PORT_ACTIVE ||
			      type == IBV_EVENT_GID_CHANGE || type == IBV_EVENT_LID_CHANGE) &&
			     ev.element.port_num == vf->dev[r].port);

		ibv_ack_async_event(&ev);
		if (ours)
			rail_event(vf, r, type);
	}
}

static void *events_main(void *arg)
{
	struct verbs_fabric *vf = arg;
	struct pollfd pf[PC_MAX_RAILS + 1];

	for (uint32_t r = 0; r < vf->nr_rails; r++)
		pf[r] = (struct pollfd){ .fd = vf->dev[r].ctx->async_fd, .events = POLLIN };
	pf[vf->nr_rails] = (struct pollfd){ .fd = vf->events_stop, .events = POLLIN };
	for (;;) {
		if (poll(pf, vf->nr_rails + 1, -1) < 0 && errno != EINTR)
			break;
		if (pf[vf->nr_rails].revents)
			break;
		for (uint32_t r = 0; r < vf->nr_rails; r++)
			if (pf[r].revents)
				drain(vf, r);
	}
	return NULL;
}

int verbs_events_start(struct verbs_fabric *vf)
{
	int ret;

	for (uint32_t r = 0; r < vf->nr_rails; r++) {
		int fd = vf->dev[r].ctx->async_fd;

		if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK))
			return -errno;
	}
	vf->events_stop = eventfd(0, EFD_CLOEXEC);
	if (vf->events_stop < 0)
		return -errno;
	ret = pthread_create(&vf->events, NULL, events_main, vf);
	if (ret) {
		close(vf->events_stop);
		vf->events_stop = -1;
		return -ret;
	}
	return 0;
}

void verbs_events_stop(struct verbs_fabric *vf)
{
	uint64_t one = 1;

	if (vf->events_stop < 0)
		return;
	if (write(vf->events_stop, &one, sizeof(one)) != sizeof(one))
		pc_warn("verbs: cannot stop the event thread: %s", strerror(errno));
	pthread_join(vf->events, NULL);
	close(vf->events_stop);
	vf->events_stop = -1;
}
