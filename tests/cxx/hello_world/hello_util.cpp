// libhello_util.so: `c++ -shared -fPIC -o libhello_util.so hello_util.cpp`
#include "hello_util.h"

#include <iostream>

void hello_util ()
{
  std::cout << "hello world (shared object)" << std::endl;
}
