/*
 * fuzz_rpc_server.c - libFuzzer target: every RPC request decoder, as a node runs
 * it: store_rpc() of a real node (layout, tier offer/query/put/fetch/release/stats,
 * spill promote, directory update/get, touch, membership). The tcp and verbs
 * backends hand a request to store_rpc exactly so, after the transport's own frame
 * checks; the authentication handshake's decoder belongs beside tcp_frame_parse
 * (fuzz_tcp_frame.c), which is where its target goes.
 *
 * Input: byte 0 picks the world (bit 0: p2p) and the node (bits 1-2), byte 1 the
 * opcode, byte 2 the caller (3: a client), then the request body. The worlds are
 * reopened every so often, so that state a stream of requests builds up (leases,
 * directory entries, a ring nodes left) stays small.
 */
#include <stdlib.h>
#include <string.h>

#include <peercache/pc_fabric.h>

#include "fuzz_world.h"

#define REOPEN_EVERY 20000

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fuzz_world *worlds[2];
	static unsigned long runs;
	struct pc_msg resp = { 0 };
	struct fuzz_world *fw;
	uint32_t from;
	uint16_t opcode;
	uint8_t *req;

	if (size < 3)
		return 0;
	if (runs++ % REOPEN_EVERY == 0) {
		for (int i = 0; i < 2; i++) {
			fuzz_world_down(worlds[i]);
			worlds[i] = fuzz_world_up(i);
			if (!worlds[i])
				abort();
		}
	}
	fw = worlds[data[0] & 1];
	opcode = (uint16_t)(data[1] % 16);
	from = data[2] % 4 == 3 ? PC_PEER_NONE : data[2] % 4;
	req = malloc(size - 3 ? size - 3 : 1);	/* exactly the body: ASan sees over-reads */
	if (!req)
		return 0;
	memcpy(req, data + 3, size - 3);
	store_rpc(fw->s[(data[0] >> 1) % FUZZ_NODES], from, opcode, req, size - 3, &resp);
	pc_msg_free(&resp);
	free(req);
	return 0;
}
