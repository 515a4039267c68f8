// Seeds of fuzz_cts_model: the first lines of each vendored CTS file that are small (the fuzzer
// mutates structure and numbers, so small valid models are the useful start).
#include <zlib.h>

#include <cstdlib>
#include <string>

#include "fuzz_target.h"

namespace npu::fuzz {

std::vector<std::vector<uint8_t>> seeds() {
    std::vector<std::vector<uint8_t>> all;
    const char* dir = std::getenv("NPU_CTS_DIR");
    const std::string base = dir != nullptr ? dir : "tests/cts";
    for (const char* file : {"V1_0", "V1_1", "V1_2", "V1_3"}) {
        gzFile gz = gzopen((base + "/" + file + ".jsonl.gz").c_str(), "rb");
        if (gz == nullptr) continue;
        std::string line;
        char chunk[4096];
        size_t taken = 0;
        while (taken < 6 && gzgets(gz, chunk, sizeof chunk) != nullptr) {
            line += chunk;
            if (line.empty() || line.back() != '\n') continue;
            line.pop_back();
            if (line.size() <= 2000) {
                all.emplace_back(line.begin(), line.end());
                ++taken;
            }
            line.clear();
        }
        gzclose(gz);
    }
    return all;
}

}  // namespace npu::fuzz
