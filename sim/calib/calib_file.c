/*
 * calib_file.c - the calibration file pccalibrate writes and pcsim --calibration
 * reads: YAML with where it was measured, how well the model fits, every case, and
 * the model keys in --set form under `set:`.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <yaml.h>

#include "calib.h"
#include "pc_commit.h"

/* The first line of /proc/cpuinfo's "model name", or "". */
static void cpu_model(char *buf, size_t len)
{
	FILE *f = fopen("/proc/cpuinfo", "r");
	char line[256];

	buf[0] = 0;
	while (f && fgets(line, sizeof(line), f)) {
		char *colon = strchr(line, ':');

		if (!strncmp(line, "model name", 10) && colon) {
			snprintf(buf, len, "%s", colon + 2);
			buf[strcspn(buf, "\n\"")] = 0;
			break;
		}
	}
	if (f)
		fclose(f);
}

int calib_write(const char *path, const struct calib *c, const struct pc_topology *t,
		const char *topology_path, char *err, size_t errlen)
{
	FILE *f = fopen(path, "w");
	struct utsname u;
	char cpu[128], date[32];
	time_t now = time(NULL);

	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -errno;
	}
	uname(&u);
	cpu_model(cpu, sizeof(cpu));
	strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
	fprintf(f, "# pccalibrate: the simulator's model fitted to a real cluster.\n"
		   "# pcsim --calibration THIS_FILE applies the keys under set: (before --set).\n"
		   "calibration:\n"
		   "  machine: \"%s %s, %s, %ld cores\"\n"
		   "  date: %s\n"
		   "  commit: %s\n"
		   "  library: %s\n"
		   "  cluster: \"%s (%s, %u nodes, protocol %s)\"\n"
		   "  reps: %u\n"
		   "  rms_error: %.4f\n"
		   "  max_error: %.4f\n"
		   "  cases:        # op, page bytes, batch (rpc: keys asked), whose pages (one peer's, own, all nodes', the disk's; idle: one peer's after the gap); median and 90th percentile us measured and simulated at the fit\n",
		u.nodename, u.release, cpu, sysconf(_SC_NPROCESSORS_ONLN), date, PC_GIT_COMMIT,
		pc_version(), t->name, topology_path, t->nr_nodes,
		t->store.protocol == PC_PROTO_TCP ? "tcp" : t->store.protocol == PC_PROTO_RXE ? "rxe" : "rdma",
		c->reps, c->rms_error, c->max_error);
	for (uint32_t i = 0; i < c->nr_cases; i++) {
		const struct calib_case *k = &c->cases[i];
		char gap[48];

		fprintf(f, "    - {op: %s, page: %u, batch: %u, pages: \"%s\", real_us: %.1f, sim_us: %.1f, real_p90_us: %.1f, sim_p90_us: %.1f}\n",
			calib_op_name(k->op), k->page, k->batch, calib_case_pages(k, gap, sizeof(gap)), k->real_us,
			k->sim_us, k->real_p90_us, k->sim_p90_us);
	}
	fprintf(f, "set:\n"
		   "  nodes.rails.latency_us: %.3f\n"
		   "  nodes.rails.gbps: %.3f\n"
		   "  nodes.rails.write_gbps: %.3f\n"
		   "  nodes.rails.op_us: %.3f\n"
		   "  nodes.rails.store_forward: %.3f\n"
		   "  nodes.rails.segment_forward: %.3f\n"
		   "  nodes.memcpy_gbps: %.3f\n"
		   "  nodes.jitter: %.3f\n"
		   "  nodes.rpc_us: %.3f\n"
		   "  nodes.wake_us: %.3f\n"
		   "  nodes.idle_us: %.3f\n"
		   "  nodes.nap_us: %.3f\n"
		   "  nodes.nap_idle_us: %.3f\n",
		c->fit.latency_us, c->fit.gbps, c->fit.write_gbps, c->fit.op_us, c->fit.store_forward,
		c->fit.segment_forward,
		c->fit.memcpy_gbps, c->fit.jitter, c->fit.rpc_us, c->fit.wake_us, c->fit.idle_us,
		c->fit.nap_us, c->fit.nap_idle_us);
	if (c->disk)
		fprintf(f, "  nodes.nvme.latency_us: %.3f\n"
			   "  nodes.nvme.read_mbps: %.3f\n"
			   "  nodes.nvme.write_mbps: %.3f\n"
			   "  nodes.nvme.iops: %.0f\n",
			c->fit.nvme_latency_us, c->fit.read_mbps, c->fit.write_mbps, c->fit.iops);
	if (fclose(f)) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -EIO;
	}
	return 0;
}

static const yaml_node_t *lookup(yaml_document_t *d, const yaml_node_t *map, const char *key)
{
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
		const yaml_node_t *k = yaml_document_get_node(d, p->key);

		if (k && k->type == YAML_SCALAR_NODE && !strcmp((const char *)k->data.scalar.value, key))
			return yaml_document_get_node(d, p->value);
	}
	return NULL;
}

int calib_read(const char *path, struct pc_topology *t, char *err, size_t errlen)
{
	FILE *f = fopen(path, "r");
	yaml_parser_t parser;
	yaml_document_t doc;
	const yaml_node_t *root, *set;
	int ret = -EINVAL;

	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -errno;
	}
	yaml_parser_initialize(&parser);
	yaml_parser_set_input_file(&parser, f);
	if (!yaml_parser_load(&parser, &doc)) {
		snprintf(err, errlen, "%s:%zu:%zu: %s", path, parser.problem_mark.line + 1,
			 parser.problem_mark.column + 1, parser.problem ? parser.problem : "not YAML");
		yaml_parser_delete(&parser);
		fclose(f);
		return -EINVAL;
	}
	root = yaml_document_get_root_node(&doc);
	set = root && root->type == YAML_MAPPING_NODE ? lookup(&doc, root, "set") : NULL;
	if (!root || root->type != YAML_MAPPING_NODE || !lookup(&doc, root, "calibration")) {
		snprintf(err, errlen, "%s:1:1: not a calibration file (no calibration: section); "
			 "write one with pccalibrate", path);
	} else if (!set || set->type != YAML_MAPPING_NODE) {
		snprintf(err, errlen, "%s: no set: mapping of model keys; write the file with pccalibrate",
			 path);
	} else {
		ret = 0;
		for (yaml_node_pair_t *p = set->data.mapping.pairs.start;
		     !ret && p < set->data.mapping.pairs.top; p++) {
			const yaml_node_t *k = yaml_document_get_node(&doc, p->key);
			const yaml_node_t *v = yaml_document_get_node(&doc, p->value);
			char assign[256], why[PC_ERR_MAX];

			if (!k || !v || k->type != YAML_SCALAR_NODE || v->type != YAML_SCALAR_NODE) {
				snprintf(err, errlen, "%s:%zu:%zu: under set:, key: value pairs of scalars",
					 path, (k ? k->start_mark.line : 0) + 1,
					 (k ? k->start_mark.column : 0) + 1);
				ret = -EINVAL;
				break;
			}
			snprintf(assign, sizeof(assign), "%s=%s", (const char *)k->data.scalar.value,
				 (const char *)v->data.scalar.value);
			ret = pc_topology_set(t, assign, why, sizeof(why));
			if (ret)
				snprintf(err, errlen, "%s:%zu:%zu: %s", path, k->start_mark.line + 1,
					 k->start_mark.column + 1, why);
		}
	}
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	fclose(f);
	return ret;
}
