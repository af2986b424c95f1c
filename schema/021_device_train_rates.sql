-- 021_device_train_rates.sql: what the cost suite's probes measured of a device (short real
-- training runs at its calibration, engine/bench/bench_cost.c; pgn_train_rates): a training
-- step's kernel, an MLP's and a gpt's FLOP rate with the launches taken off, the setup of each
-- kind of run, and an idx data set's loading. The first estimate of a train job was the GEMM
-- rate and the queued launch cost alone, which missed real runs by 0.24-18x (their setup, data
-- loading, checkpoint and the training GEMMs' other shapes). NULL: not measured; a device
-- calibrated before gets them at its next start (server/worker.c's calibrate).
ALTER TABLE device_rates ADD COLUMN step_launch_us REAL CHECK (step_launch_us > 0);
ALTER TABLE device_rates ADD COLUMN mlp_gflops REAL CHECK (mlp_gflops > 0);
ALTER TABLE device_rates ADD COLUMN mlp_setup_s REAL CHECK (mlp_setup_s > 0);
ALTER TABLE device_rates ADD COLUMN load_mbps REAL CHECK (load_mbps > 0);
ALTER TABLE device_rates ADD COLUMN gpt_gflops REAL CHECK (gpt_gflops > 0);
ALTER TABLE device_rates ADD COLUMN gpt_setup_s REAL CHECK (gpt_setup_s > 0);
