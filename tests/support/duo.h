/*
 * duo.h - two in-process nodes with disks, the cluster the spill and fault suites
 * share. Not for: tcp clusters (tests/e2e/cluster.h).
 */
#ifndef PC_TEST_DUO_H
#define PC_TEST_DUO_H

/* Two nodes n0 and n1 on one in-process world, with the given store section (YAML
 * inside the braces) and a 16 MiB disk each in this test's directory. Fatal when
 * they cannot be opened; down closes and frees all of it. */
struct pc_test_duo {
	struct pc_topology *topo;
	struct inproc_world *w;
	struct pc_store *s[2];
};

struct pc_test_duo *pc_test_duo_up(const char *store);
void pc_test_duo_down(struct pc_test_duo *C);

#endif
