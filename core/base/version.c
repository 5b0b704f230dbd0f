/* version.c - the library version string. */
#include <peercache/peercache.h>

#include "pc_build.h"

const char *pc_version(void)
{
	return PC_VERSION_STRING;
}
