// Stand-in for securec.h, the bounds-checked C library (memcpy_s & co.) an installed CANN ships
// and its public headers include. Only declarations, for tools/check_host_syntax.py: the syntax
// check compiles, it never links or runs. Signatures as the library documents them.
#ifndef MS_OPS_CANN_STUB_SECUREC_H_
#define MS_OPS_CANN_STUB_SECUREC_H_

#include <cstdarg>
#include <cstddef>

typedef int errno_t;

#ifndef EOK
#define EOK 0
#endif

extern "C" {
errno_t memcpy_s(void *dest, size_t destMax, const void *src, size_t count);
errno_t memmove_s(void *dest, size_t destMax, const void *src, size_t count);
errno_t memset_s(void *dest, size_t destMax, int c, size_t count);
errno_t strcpy_s(char *strDest, size_t destMax, const char *strSrc);
errno_t strncpy_s(char *strDest, size_t destMax, const char *strSrc, size_t count);
errno_t strcat_s(char *strDest, size_t destMax, const char *strSrc);
int sprintf_s(char *strDest, size_t destMax, const char *format, ...);
int snprintf_s(char *strDest, size_t destMax, size_t count, const char *format, ...);
int vsnprintf_s(char *strDest, size_t destMax, size_t count, const char *format, va_list argList);
}

#endif  // MS_OPS_CANN_STUB_SECUREC_H_
