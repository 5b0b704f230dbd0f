/*
 * fuzz_tcp_frame.c - libFuzzer target: the tcp server's frame parser
 * (backends/tcp/tcp_frame.c), fed as the server feeds it.
 *
 * Input: one byte of connection state (bit 0: HELLO said already; the rest: how many
 * nodes the topology has), then the bytes a peer sent. The target asks the parser
 * again as the server would with more bytes (need), and checks its promises: a
 * complete head never reaches past the input, need grows and stays under the cap,
 * OPS descriptors add up to the body, a refusal says why.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tcp_frame.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tcp_frame_ctx ctx;
	struct tcp_frame f;
	uint8_t *buf;
	size_t have;
	ssize_t r;

	if (!size)
		return 0;
	ctx = (struct tcp_frame_ctx){ .hello = data[0] & 1, .nr_nodes = (data[0] >> 1) + 1u };
	data++, size--;
	/* aligned, as the server's receive buffer is; sized exactly, so ASan sees any
	 * read past what came in */
	buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	/* as the bytes trickle in: the header first, then what it says it needs */
	for (have = size < 32 ? size : 32;; ) {
		memset(&f, 0, sizeof(f));
		r = tcp_frame_parse(&ctx, buf, have, &f);
		if (r < 0) {
			if (!f.why)
				abort();
			break;
		}
		if (r > 0) {
			if ((size_t)r > have || (size_t)r < sizeof(struct tcp_hdr) ||
			    f.body + f.body_len != buf + r)
				abort();
			if (f.hdr.type == TCP_OPS && f.nops * sizeof(struct tcp_opdesc) != f.body_len)
				abort();
			break;
		}
		if (f.need <= have || f.need > TCP_FRAME_HEAD_MAX)
			abort();
		if (f.need > size)
			break;	/* the peer sent no more */
		have = f.need;
	}
	free(buf);
	return 0;
}
