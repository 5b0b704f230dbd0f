/*
 * pc_api.h - what every public header shares: the macro that marks what libpeercache
 * exports (the library is built with hidden visibility; only declarations carrying
 * PC_API are visible) and the size of a buffer for the library's one-line errors.
 */
#ifndef PC_API_H
#define PC_API_H
#define PC_API __attribute__((visibility("default")))
#define PC_ERR_MAX 512		/* enough for any one-line error this library prints */
#endif
