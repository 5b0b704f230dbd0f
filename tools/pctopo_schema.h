/*
 * pctopo_schema.h - the topology reference from the schema tables (pctopo --schema):
 * the key tables of docs/configuration.md.
 */
#ifndef PC_PCTOPO_SCHEMA_H
#define PC_PCTOPO_SCHEMA_H

#include <stdio.h>

/* Every key of every section as Markdown tables. 1, with a line on stderr naming
 * the key, when a key has no description in core/config/topology_fields.c. */
int pctopo_schema(FILE *out);

#endif
