/* hello2.h: the "C library" of the hello_world example. */
#ifndef PNET_TEST_HELLO2_H
#define PNET_TEST_HELLO2_H

#include <stdio.h>

static inline void hello_world (void)
{
  printf ("hello world (C library)\n");
  fflush (stdout);
}

#endif
