/*
 * abi_probe.c - prints the size and field offsets of the public structs the Python
 * binding (python/peercache/_lib.py) mirrors, as compiled against peercache.h, one
 * "struct[.field] number" a line: test_lib.py compares them with ctypes'.
 */
#include <stddef.h>
#include <stdio.h>

#include <peercache/peercache.h>

#define SIZE(s) printf(#s " %zu\n", sizeof(struct s))
#define OFF(s, f) printf(#s "." #f " %zu\n", offsetof(struct s, f))

int main(void)
{
	SIZE(pc_store_opts);
	OFF(pc_store_opts, size);
	OFF(pc_store_opts, topology);
	OFF(pc_store_opts, topo);
	OFF(pc_store_opts, node);
	OFF(pc_store_opts, fabric);
	OFF(pc_store_opts, set);
	OFF(pc_store_opts, err);
	OFF(pc_store_opts, errlen);
	SIZE(pc_page);
	OFF(pc_page, key);
	OFF(pc_page, key_len);
	OFF(pc_page, data);
	OFF(pc_page, len);
	OFF(pc_page, cap);
	OFF(pc_page, status);
	SIZE(pc_metrics);
	OFF(pc_metrics, size);
	OFF(pc_metrics, reserved);
	OFF(pc_metrics, write_requests);
	OFF(pc_metrics, hits);
	OFF(pc_metrics, miss_unreachable);
	OFF(pc_metrics, round_trips);
	OFF(pc_metrics, orphans_freed);
	printf("version %d.%d\n", PC_VERSION_MAJOR, PC_VERSION_MINOR);
	return 0;
}
