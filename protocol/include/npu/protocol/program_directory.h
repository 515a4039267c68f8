#pragma once
#include <string>

namespace npu::proto {

// The directory of the running program (its /proc/self/exe), empty when unknown: where the host
// looks for the programs and images it starts (npu-fwd, the qemu transport's image and bridge).
std::string programDirectory();

}  // namespace npu::proto
