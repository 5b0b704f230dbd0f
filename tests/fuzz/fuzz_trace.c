/*
 * fuzz_trace.c - libFuzzer target: the Mooncake trace line parser
 * (common/workload/trace.c: trace_parse_line), one line per input.
 *
 * A request it returns has blocks and input tokens, its ids in the array it grew.
 */
#include <errno.h>
#include <stdlib.h>

#include "workload/trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct trace_req r = { 0 };
	uint64_t *ids = NULL;
	size_t cap = 0;
	int ret = trace_parse_line((const char *)data, size, &r, &ids, &cap);

	if (ret == 1) {
		if (!r.nids || r.input_length <= 0 || r.nids > cap || r.ids != ids)
			abort();
	} else if (ret != 0 && ret != -ENOMEM) {
		abort();
	}
	free(ids);
	return 0;
}
