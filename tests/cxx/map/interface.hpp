// The interface of an implementation of GPI-Space's `map` example
// (share/doc/example/map/map.xpnet): three functions that a library loaded at run time
// (its path is the net's `implementation` token) exports with C linkage.
//
// - map_produce writes block number `block` into `data` (a slot of the input memory);
// - map_process reads a slot of the input memory and writes a slot of the output memory;
// - map_consume reads a slot of the output memory holding block number `block`.
//
// `user_data` is the net's `user_data` token, passed through unchanged.
#pragma once

#include <pnet_cxx.hpp>

#include <utility>

extern "C" void map_produce(::gspc::pnet::type::bytearray::type const& user_data,
                            std::pair<void*, unsigned long> const& data,
                            unsigned long block);

extern "C" void map_process(::gspc::pnet::type::bytearray::type const& user_data,
                            std::pair<void const*, unsigned long> const& input,
                            std::pair<void*, unsigned long> const& output);

extern "C" void map_consume(::gspc::pnet::type::bytearray::type const& user_data,
                            std::pair<void const*, unsigned long> const& data,
                            unsigned long block);
