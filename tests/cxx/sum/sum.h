// sum.h: the library the `sum` example's module calls (`::sum (p.x, p.y)`).
#ifndef PNET_TEST_SUM_H
#define PNET_TEST_SUM_H

inline long sum (long x, long y)
{
  return x + y;
}

#endif
