// hello_util.h: the shared object of the hello_world example (libhello_util.so).
#ifndef PNET_TEST_HELLO_UTIL_H
#define PNET_TEST_HELLO_UTIL_H

void hello_util ();

#endif
