// The SPIR-V of shaders/*.comp, compiled by glslc at build time and embedded by cmake/vulkan.cmake
// (gen/vulkan/embedded_shaders.cpp).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace lockstep::vulkan {

struct ShaderCode {
  const char* name;  // the .comp file's stem: "conv", "ew_program", ...
  const uint32_t* words;
  size_t count;
};

const std::vector<ShaderCode>& embedded_shaders();

}  // namespace lockstep::vulkan
