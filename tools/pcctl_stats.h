/*
 * pcctl_stats.h - pcctl's stats command (pcctl_stats.c), beside the membership
 * commands of pcctl.c.
 */
#ifndef PC_PCCTL_STATS_H
#define PC_PCCTL_STATS_H

/* pcctl stats ...: argv[1] is "stats". Returns the exit code. */
int pcctl_stats(int argc, char **argv);

#endif
