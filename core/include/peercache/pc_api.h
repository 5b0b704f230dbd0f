/*
 * pc_api.h - the one macro that marks what libpeercache exports. The library is
 * built with hidden visibility; only declarations carrying PC_API are visible.
 */
#ifndef PC_API_H
#define PC_API_H
#define PC_API __attribute__((visibility("default")))
#endif
