# Core library: transport, collectives, codecs, scheduling.
# It never depends on libtorch.
add_library(qccl_core_objects OBJECT
  qccl/common/errors.cc
  qccl/common/checksum.cc
  qccl/common/files.cc
  qccl/common/readable_file.cc
  qccl/common/progress_watch.cc
  qccl/common/page_faults.cc
  qccl/common/resident_memory.cc
  qccl/common/allocator_settings.cc
  qccl/common/half_precision.cc
  qccl/transport/transport.cc
  qccl/transport/half_sum.cc
  qccl/transport/local_transport.cc
  qccl/collectives/options.cc
  qccl/collectives/layout.cc
  qccl/collectives/fingerprint.cc
  qccl/collectives/call_check.cc
  qccl/collectives/collective_call.cc
  qccl/collectives/small_allreduce.cc
  qccl/collectives/communicator.cc
  qccl/collectives/work.cc
  qccl/collectives/stream.cc
  qccl/collectives/validate.cc
  qccl/collectives/fp32_sum.cc
  qccl/collectives/codec_steps.cc
  qccl/collectives/encoding.cc
  qccl/collectives/codec_queue.cc
  qccl/collectives/ring.cc
  qccl/collectives/schedule.cc
  qccl/collectives/exchange.cc
  qccl/collectives/halving_doubling.cc
  qccl/collectives/allreduce.cc
  qccl/collectives/reduce_scatter.cc
  qccl/collectives/allgather.cc
  qccl/collectives/direct_gather.cc
  qccl/collectives/native.cc
  qccl/collectives/decode_sum.cc
  qccl/collectives/broadcast.cc
  qccl/collectives/host_layout.cc
  qccl/collectives/host_groups.cc
  qccl/collectives/hierarchical.cc
  qccl/collectives/host_pipeline.cc
  qccl/collectives/receive_window.cc
  qccl/collectives/offset_encoding.cc
  qccl/codecs/codec.cc
  qccl/codecs/sparse_messages.cc
  qccl/codecs/hierarchical_step.cc
  qccl/codecs/group_data_path.cc
  qccl/codecs/tensor_layout.cc
  qccl/codecs/tensor_state.cc
  qccl/codecs/kernels/kernels.cc
  qccl/codecs/levels.cc
  qccl/codecs/element_form_reference.cc
  qccl/codecs/minmax_records.cc
  qccl/codecs/packed_indices.cc
  qccl/codecs/host_memory_vector.cc
  qccl/codecs/staged_reduction.cc
  qccl/codecs/gathered_staging.cc
  qccl/codecs/device_step.cc
  qccl/codecs/codec_spec.cc
  qccl/codecs/registry/codec_registry.cc
  qccl/codecs/registry/recommended_settings.cc
  qccl/codecs/global_norm.cc
  qccl/codecs/quantizers/float_codecs.cc
  qccl/codecs/fp32_mean.cc
  qccl/codecs/quantizers/linear_dither.cc
  qccl/codecs/quantizers/exp_dither_reduction.cc
  qccl/codecs/quantizers/global_qsgd.cc
  qccl/codecs/quantizers/qsgd.cc
  qccl/codecs/quantizers/quantization_levels.cc
  qccl/codecs/quantizers/level_statistics.cc
  qccl/codecs/quantizers/levels_sgd.cc
  qccl/codecs/quantizers/statistics_exchange.cc
  qccl/codecs/entropy/entropy_codes.cc
  qccl/codecs/quantizers/qgenx.cc
  qccl/codecs/quantizers/minmax.cc
  qccl/codecs/quantizers/ternary_codes.cc
  qccl/codecs/quantizers/terngrad.cc
  qccl/codecs/quantizers/natural.cc
  qccl/codecs/quantizers/int_rounding.cc
  qccl/codecs/quantizers/adaptive_scale.cc
  qccl/codecs/quantizers/integer_sum_reduction.cc
  qccl/codecs/quantizers/intsgd.cc
  qccl/codecs/error_feedback.cc
  qccl/codecs/sign/sign_bits.cc
  qccl/codecs/sign/sign_levels_encoding.cc
  qccl/codecs/sign/vote_count_reduction.cc
  qccl/codecs/sign/sign_vote.cc
  qccl/codecs/sign/one_bit_codecs.cc
  qccl/codecs/low_rank/powersgd_math.cc
  qccl/codecs/low_rank/powersgd.cc
  qccl/codecs/sparsifiers/sparse_selection.cc
  qccl/codecs/sparsifiers/sparse_pairs.cc
  qccl/codecs/sparsifiers/topk.cc
  qccl/codecs/sparsifiers/randk.cc
  qccl/codecs/sparsifiers/dgc_selection.cc
  qccl/codecs/sparsifiers/dgc.cc
  qccl/scheduling/bucket_plan.cc
  qccl/scheduling/bucket_reducer.cc
  qccl/scheduling/perf_model.cc
  qccl/scheduling/host_link_model.cc
  qccl/scheduling/halving_doubling_traffic.cc
  qccl/scheduling/algorithm_choice.cc
  qccl/scheduling/measured_host_links.cc
  qccl/scheduling/merge_plan.cc
  qccl/scheduling/group_costs.cc
  qccl/scheduling/rank_values.cc
  qccl/scheduling/slowest_profile.cc
)
target_include_directories(qccl_core_objects PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(qccl_core_objects PUBLIC Threads::Threads)
# The MPI transport where MPI was found; without it (QCCL_DEVICE_CHECK_ONLY
# on a GPU machine), MpiRuntime says the build has none and in-process
# ranks still run.
if(TARGET MPI::MPI_C)
  target_sources(qccl_core_objects PRIVATE ${CMAKE_CURRENT_LIST_DIR}/qccl/transport/mpi_transport.cc)
  target_link_libraries(qccl_core_objects PRIVATE MPI::MPI_C)
else()
  target_sources(qccl_core_objects PRIVATE ${CMAKE_CURRENT_LIST_DIR}/qccl/transport/mpi_unavailable.cc)
endif()
target_compile_features(qccl_core_objects PUBLIC cxx_std_20)
# Use MPI's C API only: its deprecated C++ bindings need another library.
target_compile_definitions(qccl_core_objects PRIVATE OMPI_SKIP_MPICXX=1 MPICH_SKIP_MPICXX=1)
# No a*b+c fused into FMA in some instruction-set clones and not in others:
# every rank computes bit-identical values whatever CPU it runs on.
target_compile_options(qccl_core_objects PRIVATE -ffp-contract=off)

add_library(qccl_core STATIC $<TARGET_OBJECTS:qccl_core_objects>)
target_include_directories(qccl_core PUBLIC ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(qccl_core PUBLIC Threads::Threads)
if(TARGET MPI::MPI_C)
  target_link_libraries(qccl_core PRIVATE MPI::MPI_C)
endif()
target_compile_features(qccl_core PUBLIC cxx_std_20)

