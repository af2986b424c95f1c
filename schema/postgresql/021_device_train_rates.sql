-- 021_device_train_rates.sql (PostgreSQL): schema/021_device_train_rates.sql's columns.
ALTER TABLE device_rates ADD COLUMN step_launch_us DOUBLE PRECISION CHECK (step_launch_us > 0);
ALTER TABLE device_rates ADD COLUMN mlp_gflops DOUBLE PRECISION CHECK (mlp_gflops > 0);
ALTER TABLE device_rates ADD COLUMN mlp_setup_s DOUBLE PRECISION CHECK (mlp_setup_s > 0);
ALTER TABLE device_rates ADD COLUMN load_mbps DOUBLE PRECISION CHECK (load_mbps > 0);
ALTER TABLE device_rates ADD COLUMN gpt_gflops DOUBLE PRECISION CHECK (gpt_gflops > 0);
ALTER TABLE device_rates ADD COLUMN gpt_setup_s DOUBLE PRECISION CHECK (gpt_setup_s > 0);
