// Lab-only: rewrites one field of a member's label (both copies, valid
// crc32c) to craft the cases assembly must refuse, e.g. a member left behind
// at an older generation. Not installed.
//
//   fxblk-labeltool generation DEVICE [N]   print, or set to N
//   fxblk-labeltool owner DEVICE [NQN|-]     print, or set (- : no owner),
//                                            as another host's fxctl writes it
#include "label.hpp"

#include <cstdlib>
#include <exception>
#include <iostream>
#include <string>

int main(int argc, char **argv)
{
	std::string field = argc > 1 ? argv[1] : "";
	if (argc < 3 || argc > 4 || (field != "generation" && field != "owner")) {
		std::cerr << "usage: fxblk-labeltool generation|owner DEVICE [VALUE]\n";
		return 2;
	}
	try {
		auto ml = fxctl::label::read_member(argv[2]);
		if (!ml.label) {
			std::cerr << argv[2] << ": no valid label (primary: " << ml.primary_reason
				  << "; backup: " << ml.backup_reason << ")\n";
			return 1;
		}
		if (argc == 3) {
			if (field == "generation")
				std::cout << ml.label->generation << '\n';
			else
				std::cout << ml.label->owner_nqn << '\n';
			return 0;
		}
		fxctl::label::Label l = *ml.label;
		if (field == "generation")
			l.generation = std::strtoull(argv[3], nullptr, 10);
		else
			l.owner_nqn = std::string(argv[3]) == "-" ? "" : argv[3];
		fxctl::label::write_member(argv[2], l);
	} catch (const std::exception &e) {
		std::cerr << argv[2] << ": " << e.what() << '\n';
		return 1;
	}
	return 0;
}
