"""Training: the three CUDA-L1 stages (augment + SFT, rejection-sampling refinement, contrastive
GRPO) on TRL, with a verl adapter for clusters. cudal1 supplies the data, the prompts built from
the exemplar database, and the reward; the trainers are TRL's and verl's own."""
