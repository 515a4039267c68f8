// npu: the command-line entry point of npu-stack.
#include <CLI/CLI.hpp>
#include <cstdio>

#include "cli_checks.h"
#include "cmd_bench_onnx.h"
#include "cmd_bench_sim.h"
#include "cmd_conformance.h"
#include "cmd_model.h"
#include "cmd_onnx.h"
#include "cmd_quantize.h"
#include "cmd_run_onnx.h"
#include "cmd_sim.h"
#include "cmd_stress.h"
#include "commands.h"

int main(int argc, char** argv) {
    using npu::tools::DeviceChoice;
    CLI::App app{"npu: run, inspect and benchmark the npu-stack NPU driver"};
    app.require_subcommand(1);
    app.set_help_all_flag("--help-all", "Show help for every command");

    DeviceChoice choice;
    bool json = false;
    auto addDeviceOptions = [&](CLI::App* cmd, bool withDevice) {
        if (withDevice) {
            cmd->add_option("--device", choice.device, "npu or reference")
                ->check(CLI::IsMember({"npu", "reference"}))
                ->capture_default_str();
        }
        cmd->add_option("--transport", choice.transport,
                        "loopback (in-process firmware), unix (npu-fwd daemon), usb (docs/usb.md) or qemu "
                        "(the firmware image on an emulated Cortex-M55)")
            ->check(CLI::IsMember({"loopback", "unix", "usb", "qemu"}))
            ->capture_default_str();
        cmd->add_option("--usb-device", choice.usbDevice,
                        "usb transport: VID:PID[:SERIAL] in hex (default 1209:0001, any serial)");
        cmd->add_option("--socket", choice.socketPath,
                        "unix transport: the daemon's socket (default: per-user runtime dir)");
        cmd->add_flag("--json", json, "print JSON instead of tables");
        cmd->add_option(
               "--hw-config", choice.hwConfigPath,
               "npu: the simulated NPU's config JSON (docs/hw-config.md; unix: for the daemon it starts)")
            ->check(CLI::ExistingFile);
        cmd->add_flag("--no-autotune{false}", choice.autotune,
                      "npu: compile with the planner's tilings, no autotuning trials (docs/firmware.md)");
        npu::tools::addTimeoutOptions(cmd, choice);
    };

    auto* info = app.add_subcommand("info", "Versions, capabilities and the hardware configuration");
    addDeviceOptions(info, false);

    std::string file, name;
    auto* run = app.add_subcommand(
        "run", "Run one test vector of a JSON-lines file, or a built-in network, and check its outputs");
    auto* runFile =
        run->add_option("file", file, "FILE.jsonl or FILE.jsonl.gz (a test vector), or MODEL.onnx")
            ->check(CLI::ExistingFile);
    run->add_option("--name", name, "the vector's name")->needs(runFile);
    npu::tools::BuiltinRunOptions builtin;
    run->add_option("--builtin", builtin.name, "run a built-in network: mobilenet_v2 or ssd_mobilenet_v1")
        ->excludes(runFile);
    run->add_option("--input-size", builtin.inputSize,
                    "--builtin: image height and width (default: the network's)")
        ->check(CLI::Range(32, 512));
    run->add_option("--csv", builtin.files.csv, "write the per-operation profile as CSV to FILE");
    run->add_option("--trace", builtin.files.trace, "write a Chrome/Perfetto trace of the run to FILE");
    addDeviceOptions(run, true);
    npu::tools::RunOptions runOptions;
    run->add_option("--dot", runOptions.dotFile, "also write the model as a Graphviz graph to FILE");
    run->add_option("--output", runOptions.outputFile,
                    "write the outputs as NumPy arrays: output 0 to FILE.npy, output k to FILE_k.npy");
    run->add_flag("--exact", runOptions.exact,
                  "outputs must equal the expected bytes, no CTS tolerance (a vector saved by the "
                  "differential test holds the reference's outputs)")
        ->needs(runFile);
    run->add_option("--cache-dir", choice.cacheDir,
                    "keep compilations in DIR and reuse them (driver-managed cache)");
    run->add_option("--cache-state-dir", choice.cacheStateDir,
                    "the cache key's secret and token map (default: XDG state dir)");
    npu::tools::OnnxRunOptions onnxRun;
    run->add_option(
           "--input", onnxRun.inputs,
           "MODEL.onnx: an input tensor (.npy, .pb, .raw float32 or .png image), in input order; repeatable")
        ->check(CLI::ExistingFile);
    run->add_option("--input-shape", onnxRun.inputShapes,
                    "MODEL.onnx: NAME=1x3x48x192 for an input with dynamic dimensions; repeatable");
    run->add_flag("--explain", onnxRun.explain, "MODEL.onnx: print where each operation ran and why");
    run->add_option("--top-k", onnxRun.topK, "MODEL.onnx: classes shown for a [1, C] output")
        ->capture_default_str();
    npu::tools::addImageOptions(*run, onnxRun);

    std::string listFile;
    std::vector<std::string> listFilters;
    auto* list = app.add_subcommand("list", "List the vectors of a JSON-lines file: names and operations");
    list->add_option("file", listFile, "FILE.jsonl or FILE.jsonl.gz")->required()->check(CLI::ExistingFile);
    list->add_option("--filter", listFilters, "only names matching GLOB (repeatable)")
        ->allow_extra_args(false);
    list->add_flag("--json", json, "print JSON");

    auto* demo = app.add_subcommand("demo", "The main job: a small quantized CNN through the whole stack");
    addDeviceOptions(demo, false);

    auto* bench = app.add_subcommand("bench", "Benchmarks that print figures");
    bench->require_subcommand(1);
    int iterations = 2000;
    auto* benchRpc = bench->add_subcommand("rpc",
                                           "Round-trip latency: Ping and a one-operation execution over "
                                           "loopback, unix and qemu, and a bare socket");
    benchRpc->add_flag("--json", json, "print JSON");
    benchRpc->add_option("--iterations", iterations, "round trips per figure")
        ->check(CLI::Range(10, 1000000))
        ->capture_default_str();
    std::string benchTransport = "local";
    benchRpc
        ->add_option("--transport", benchTransport,
                     "local (loopback and unix, the default) or usb (docs/usb.md: a device and its raw echo)")
        ->check(CLI::IsMember({"local", "usb"}));
    benchRpc->add_option("--usb-device", choice.usbDevice,
                         "usb: VID:PID[:SERIAL] in hex (default 1209:0001)");
    std::string benchHwConfig;
    benchRpc->add_option("--hw-config", benchHwConfig, "the simulated NPU's config JSON (docs/hw-config.md)")
        ->check(CLI::ExistingFile);

    auto* benchExec = bench->add_subcommand(
        "exec",
        "Per-execution overhead of sync, async, fenced and burst over loopback and unix, and a bare socket");
    benchExec->add_flag("--json", json, "print JSON");
    benchExec->add_option("--iterations", iterations, "executions per figure")
        ->check(CLI::Range(10, 1000000))
        ->capture_default_str();
    benchExec->add_option("--hw-config", benchHwConfig, "the simulated NPU's config JSON (docs/hw-config.md)")
        ->check(CLI::ExistingFile);

    auto* benchCache = bench->add_subcommand(
        "cache",
        "Compile vs. prepare-from-cache of the largest model the NPU compiles, and hashing throughput");
    benchCache->add_flag("--json", json, "print JSON");
    int cacheIterations = 20;
    benchCache->add_option("--iterations", cacheIterations, "prepares per figure")
        ->check(CLI::Range(3, 100000))
        ->capture_default_str();
    benchCache
        ->add_option("--hw-config", benchHwConfig, "the simulated NPU's config JSON (docs/hw-config.md)")
        ->check(CLI::ExistingFile);

    npu::tools::BenchSimCli benchSimCli(*bench);
    npu::tools::BenchModelCli benchModelCli(*bench);
    npu::tools::BenchOnnxCli benchOnnxCli(*bench);

    std::string cacheAction, cacheDir, cacheStateDir;
    auto* cache = app.add_subcommand("cache", "Inspect, verify or clear the compilation cache");
    cache->add_option("action", cacheAction, "list, verify or clear")
        ->required()
        ->check(CLI::IsMember({"list", "verify", "clear"}));
    cache->add_option(
        "dir", cacheDir,
        "a driver-managed cache directory (npu run --cache-dir); without it, the token map only");
    cache->add_option("--state-dir", cacheStateDir, "the cache state directory (default: XDG state dir)");
    cache->add_flag("--json", json, "print JSON");

    npu::tools::SimCli simCli(app);
    npu::tools::ConformanceCli conformanceCli(app);
    npu::tools::OnnxCli onnxCli(app);
    npu::tools::QuantizeCli quantizeCli(app);
    npu::tools::StressCli stressCli(app);

    // CLI11 reads an unknown word as a stray argument and says only "A subcommand is required".
    if (argc > 1 && argv[1][0] != '-') {
        std::string names;
        bool known = false;
        for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) {
            known = known || sub->check_name(argv[1]);
            names += (names.empty() ? "" : ", ") + sub->get_name();
        }
        if (!known) {
            std::fprintf(stderr, "npu: unknown command '%s' (commands: %s); see npu --help\n", argv[1],
                         names.c_str());
            return 2;
        }
    }
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e) == 0 ? 0 : 2;
    }

    if (info->parsed()) return npu::tools::cmdInfo(choice, json);
    if (run->parsed() && file.size() > 5 && file.substr(file.size() - 5) == ".onnx") {
        onnxRun.files = builtin.files;
        onnxRun.dotFile = runOptions.dotFile;
        return npu::tools::cmdRunOnnx(choice, file, onnxRun, json);
    }
    if (run->parsed() && !builtin.name.empty()) return npu::tools::cmdRunBuiltin(choice, builtin, json);
    if (run->parsed() && (file.empty() || name.empty())) {
        std::fprintf(stderr, "npu run: give FILE --name NAME (a test vector) or --builtin NAME\n");
        return 2;
    }
    if (run->parsed()) {
        runOptions.json = json;
        runOptions.csvFile = builtin.files.csv;
        runOptions.traceFile = builtin.files.trace;
        return npu::tools::cmdRun(choice, file, name, runOptions);
    }
    if (list->parsed()) return npu::tools::cmdList(listFile, listFilters, json);
    if (demo->parsed()) return npu::tools::cmdDemo(choice, json);
    if (benchRpc->parsed() && benchTransport == "usb")
        return npu::tools::cmdBenchRpcUsb(json, iterations, choice.usbDevice);
    if (benchRpc->parsed()) return npu::tools::cmdBenchRpc(json, iterations, benchHwConfig);
    if (benchExec->parsed()) return npu::tools::cmdBenchExec(json, iterations, benchHwConfig);
    if (benchCache->parsed()) return npu::tools::cmdBenchCache(json, cacheIterations, benchHwConfig);
    if (benchSimCli.parsed()) return benchSimCli.run();
    if (benchModelCli.parsed()) return benchModelCli.run();
    if (benchOnnxCli.parsed()) return benchOnnxCli.run();
    if (simCli.parsed()) return simCli.run();
    if (conformanceCli.parsed()) return conformanceCli.run();
    if (onnxCli.parsed()) return onnxCli.run();
    if (quantizeCli.parsed()) return quantizeCli.run();
    if (stressCli.parsed()) return stressCli.run();
    if (cache->parsed()) return npu::tools::cmdCache(cacheAction, cacheDir, cacheStateDir, json);
    return 2;
}
