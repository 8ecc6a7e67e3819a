#!/bin/bash
# prep.sh NAME MINUTES: a copy of the base run (SFT and RM cold start done) with the current
# quickstart recipe and an RL-only time budget, ready for `triad run .scratch/NAME.ts --resume`.
set -e
cd /work/wt/lead
NAME=$1; MIN=$2
BASE=/work/exp/quickstart-20261130-003636
D=/work/exp/$NAME
rm -rf $D; mkdir -p $D
cp -a $BASE/tokenizer.json $D/
mkdir -p $D/checkpoints $D/logs $D/eval
cp -a $BASE/checkpoints/sft $BASE/checkpoints/reward-sft $D/checkpoints/
sed -e "s/maxMinutes: [0-9.]*/maxMinutes: $MIN/" -e "s|from './define-recipe.ts'|from '../../recipes/define-recipe.ts'|" recipes/quickstart.ts > .scratch/$NAME.ts
sed -e "s/maxMinutes: [0-9.]*/maxMinutes: 17/" -e "s|from './define-recipe.ts'|from '../../recipes/define-recipe.ts'|" recipes/quickstart.ts > .scratch/$NAME-full.ts
npx triad run .scratch/$NAME-full.ts --check > $D/recipe.json
ls $BASE; ls $D
