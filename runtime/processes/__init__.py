"""The processes a run starts and what they leave: children ended with their parent, the trainer, fanned-out work.

``children`` starts child processes in their own process group and ends them by PID; ``trainer`` launches
the SFT/GRPO trainer process and logs its output; ``fanout`` runs one fanned-out generation task;
``generators`` keeps one loaded generator per model; ``abandoned`` closes the runs and flow runs a killed
process left open.
"""
