// hello_world.hpp: the "C++ library" of the hello_world example.
#ifndef PNET_TEST_HELLO_WORLD_HPP
#define PNET_TEST_HELLO_WORLD_HPP

#include <iostream>

inline void impl_hello_world ()
{
  std::cout << "hello world (C++ library)" << std::endl;
}

#endif
