"""Policies for the philosophers: scripted baselines and LLM agents."""
