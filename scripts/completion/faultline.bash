# bash completion for faultline(1); installed as
# share/bash-completion/completions/faultline.
#
# The commands and each command's options are read from the tool's own
# --help, so that this file cannot fall behind it: the commands from
# "faultline --help", the options (and which take an argument) from
# "faultline CMD --help".  A command's PID operand completes to the live
# processes registered with faultlined ("faultline ps", through the
# --socket given on the line or $FAULTLINE_SOCKET); profile's, which need
# not be registered, to every process.

# The commands of "faultline --help": the lines after "Commands:".
_faultline_commands()
{
	"$1" --help 2>/dev/null | awk '/^Commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 }'
}

# "--name ARG" or "--name" per option of "faultline CMD --help" (short
# letters as "-s ARG"), one a line.
_faultline_options()
{
	"$1" "$2" --help 2>/dev/null | awk '
		/^Options:/ { on = 1; next }
		on && /^  -/ {
			line = $0; sub(/^  /, "", line)
			n = split(line, w, /  +/)
			spec = w[1]; arg = ""
			if (split(spec, f, " ") >= 2 && f[length(f)] !~ /^-/)
				arg = " " f[length(f)]
			gsub(/,/, "", spec)
			m = split(spec, f, " ")
			for (i = 1; i <= m; i++)
				if (f[i] ~ /^-/)
					print f[i] arg
		}'
}

# The live processes registered with faultlined: PID in the first column,
# STATE after the 16 of COMM (a COMM may hold blanks).
_faultline_registered()
{
	local fl=$1 socket=$2
	"$fl" ps ${socket:+--socket "$socket"} 2>/dev/null |
		awk 'NR > 1 && $1 ~ /^[0-9]+$/ && substr($0, 27, 4) == "live" { print $1 }'
}

_faultline()
{
	local fl=${COMP_WORDS[0]} cur=${COMP_WORDS[COMP_CWORD]}
	local prev=${COMP_WORDS[COMP_CWORD - 1]} cmd="" socket="" i w
	local -a operands=()

	COMPREPLY=()
	if [ "$COMP_CWORD" -eq 1 ]; then
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "--help --version" -- "$cur"))
		else
			COMPREPLY=($(compgen -W "$(_faultline_commands "$fl")" -- "$cur"))
		fi
		return 0
	fi
	cmd=${COMP_WORDS[1]}

	local opts takes
	opts=$(_faultline_options "$fl" "$cmd")
	[ -n "$opts" ] || return 0
	# The options that take an argument, as " --socket -s ... ".
	takes=" $(awk 'NF == 2 { printf "%s ", $1 }' <<<"$opts")"

	# The operands before the word being completed, and --socket's value.
	for ((i = 2; i < COMP_CWORD; i++)); do
		w=${COMP_WORDS[i]}
		if [ "$w" = "--" ] && [ "$cmd" = run ]; then
			operands+=(--)
			continue
		fi
		if [[ $w == -* ]] && [ ${#operands[@]} -eq 0 -o "$cmd" != run ]; then
			if [[ $takes == *" $w "* ]]; then
				i=$((i + 1))
				[ "$w" = --socket ] && socket=${COMP_WORDS[i]}
			elif [[ $w == --socket=* ]]; then
				socket=${w#--socket=}
			fi
			continue
		fi
		operands+=("$w")
	done
	# run: from PROGRAM on, the words are PROGRAM's own.
	if [ "$cmd" = run ] && [ ${#operands[@]} -gt 0 ]; then
		if [ "${operands[0]}" = -- ] && [ ${#operands[@]} -eq 1 ]; then
			COMPREPLY=($(compgen -c -- "$cur") $(compgen -f -- "$cur"))
		else
			COMPREPLY=($(compgen -f -- "$cur"))
		fi
		return 0
	fi

	# The argument of an option.
	if [[ $prev == -* ]] && [[ $takes == *" $prev "* ]]; then
		case $prev in
		--socket | --preload)
			COMPREPLY=($(compgen -f -- "$cur")) ;;
		--log)
			COMPREPLY=($(compgen -W "error warn info debug" -- "$cur")) ;;
		--sort)
			COMPREPLY=($(compgen -W "faults recent" -- "$cur")) ;;
		--pid)
			COMPREPLY=($(compgen -W "$(_faultline_registered "$fl" "$socket")" -- "$cur")) ;;
		esac
		return 0
	fi
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$(awk '{ print $1 }' <<<"$opts")" -- "$cur"))
		return 0
	fi

	case $cmd in
	faultmap | stackmap | healable)
		COMPREPLY=($(compgen -f -- "$cur")) ;;
	run)
		COMPREPLY=($(compgen -c -- "$cur") $(compgen -f -- "$cur")) ;;
	profile)
		[ ${#operands[@]} -eq 0 ] &&
			COMPREPLY=($(compgen -W "$(cd /proc && printf '%s\n' [0-9]*)" -- "$cur")) ;;
	sites | stackmaps | request | patch | invalidate | heal | unheal)
		if [ ${#operands[@]} -eq 0 ]; then
			COMPREPLY=($(compgen -W "$(_faultline_registered "$fl" "$socket")" -- "$cur"))
		elif [ "$cmd" = request ] && [ ${#operands[@]} -eq 1 ]; then
			COMPREPLY=($(compgen -W "ping heal-threshold unheal-after" -- "$cur"))
		fi ;;
	esac
	return 0
}
complete -F _faultline faultline
