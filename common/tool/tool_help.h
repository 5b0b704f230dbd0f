/*
 * tool_help.h - what a command-line program says about itself: one table per tool
 * (synopsis, every option with its default, examples, exit status) that --help
 * prints as text and --man prints as a man page (docs/man/NAME.1 is that output,
 * checked by the docs.man test), and --version.
 *
 * Not for: parsing the options (each tool keeps its getopt loop); tool_std_flags
 * only checks that the getopt table and this one name the same options.
 */
#ifndef PC_TOOL_HELP_H
#define PC_TOOL_HELP_H

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

struct tool_opt {
	const char *flag;	/* as the synopsis writes it: "--topology FILE" */
	const char *def;	/* the default in words; NULL: none (required or off) */
	const char *help;	/* what it does, one or two sentences */
};

struct tool_example {
	const char *cmd;	/* a command line that works from the source tree */
	const char *what;	/* what it shows */
};

struct tool_doc {
	const char *name;			/* "pcd" */
	const char *summary;			/* one line, lower case: "the peer daemon" */
	const char *const *synopsis;		/* lines without the name, NULL-terminated */
	const char *description;		/* paragraphs separated by "\n\n" */
	const struct tool_opt *opts;		/* { NULL }-terminated */
	const struct tool_example *examples;	/* { NULL }-terminated */
	const char *exit_status;		/* one paragraph */
	const char *environment;		/* NULL: none; lines "NAME: meaning" */
	const char *see_also;			/* "pctopo(1), pcctl(1)" */
	bool needs_args;			/* no arguments at all: usage and exit 2 */
};

/* The environment every program that opens a store reads. */
#define TOOL_ENV_STORE                                                                      \
	"PC_LOG_LEVEL: error, warn, info (the default) or debug: the lowest level of the "  \
	"library's log lines.\n"                                                             \
	"PEERCACHE_SECRET_FILE: the cluster secret's file when store.auth_secret_file is "  \
	"empty (docs/security.md).\n"                                                        \
	"PC_VERBS_DEVICE: the RDMA device to open (protocol rdma/rxe) when no rail names "  \
	"one."

/* Handle --help (-h), --version and --man before the tool's own parsing, and with
 * needs_args, no arguments at all (the synopsis on stderr, exit code 2). Returns
 * only when none of these applied. --help and --man also check that every long
 * option of getopt_opts appears in doc->opts and the other way round (a mismatch
 * is a build mistake: a line on stderr and exit code 3). */
void tool_std_flags(const struct tool_doc *doc, const struct option *getopt_opts, int argc,
		    char **argv);

/* The full help text, as --help prints it. */
void tool_help(const struct tool_doc *doc, FILE *out);

/* The man page in roff (man(7)), as --man prints it. */
void tool_man(const struct tool_doc *doc, FILE *out);

/* "pcd (peercache) 0.2.0, library 0.2.0". */
void tool_version(const struct tool_doc *doc, FILE *out);

#endif
