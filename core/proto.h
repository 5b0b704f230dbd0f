/*
 * proto.h - the RPCs peers send each other, and their wire format. Opcodes are
 * stable numbers; bodies are little-endian structs (peercache runs on little-endian
 * hosts only). Every decoder checks sizes and ranges before it trusts a field.
 *
 * Not for: transport framing (each fabric backend has its own).
 */
#ifndef PC_PROTO_H
#define PC_PROTO_H

#include <stdint.h>

enum pc_rpc_opcode {
	PC_RPC_LAYOUT = 1,		/* () -> struct proto_layout + classes */
};

#define PROTO_LAYOUT_MAGIC 0x594c4350u	/* "PCLY" */
#define PROTO_LAYOUT_VERSION 1

/* A node's slot layout: what a reader needs to address any slot without asking. */
struct proto_layout {
	uint32_t magic;
	uint16_t version;
	uint16_t nr_classes;
	uint32_t node;
	uint32_t pad;
	uint64_t incarnation;		/* of the node's fabric endpoint: a restart changes it */
};

struct proto_layout_class {
	uint64_t page_bytes;
	uint64_t stride;
	uint64_t mem_stride;		/* stride, or 64 when pages are not stored */
	uint64_t nr_buckets;
	uint64_t index_stride;
	uint64_t base;			/* address of the region (slots, then index) */
	uint32_t ways;
	uint32_t rkey;
};

#endif
